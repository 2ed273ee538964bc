// Quickstart: connect, set, get, conditional set, delete, close.
// Run: MQSTATE_URL=mqtt://127.0.0.1:1883 node examples/quickstart.mjs
import { Client } from 'mqstate'

const client = await Client.connect(process.env.MQSTATE_URL ?? 'mqtt://localhost:1883')
try {
  const { version } = await client.set('greeting', 'hello', { expiryMs: 60_000 })
  console.log(`set greeting at version ${version}`)

  const value = await client.get('greeting')
  console.log(`get greeting: ${value?.text}`)

  const again = await client.set('greeting', 'hi', { condition: 'nx' })
  console.log(`set greeting only if missing: applied=${again.applied}`)

  console.log(`vdel greeting hello: ${await client.vdel('greeting', 'hello')}`)
  console.log(`delete greeting: ${await client.delete('greeting')} key(s) deleted`)
} finally {
  await client.close()
}
