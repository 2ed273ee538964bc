// A leased lock and fenced writes: the lock's fencing token protects the writes, and
// edit() does acquire / read / write / release in one call.
// Run: MQSTATE_URL=mqtt://127.0.0.1:1883 node examples/lock.mjs
import { Client } from 'mqstate'

const client = await Client.connect(process.env.MQSTATE_URL ?? 'mqtt://localhost:1883')
try {
  const lock = client.lock('counter-lock', { leaseMs: 5_000 })

  const token = await lock.acquire({ timeoutMs: 10_000, signal: AbortSignal.timeout(15_000) })
  console.log(`holder ${await lock.holder()} with fencing token ${token}`)
  await client.set('counter', '0', { fencingToken: token })
  await lock.release()

  const result = await lock.edit('counter', async (previous) => String(Number(previous?.text ?? '0') + 1))
  console.log(`counter edited to ${(await client.get('counter'))?.text} in ${result.attempts} attempt(s)`)

  try {
    await lock.edit('counter', () => { throw new Error('no change today') })
  } catch (err) {
    console.log(`the edit function's own error came back: ${/** @type {Error} */ (err).message}`)
  }
} finally {
  await client.close()
}
