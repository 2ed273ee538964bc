// Leader election: two candidates, one leader at a time; resigning hands over.
// Run: MQSTATE_URL=mqtt://127.0.0.1:1883 node examples/election.mjs
import { Client } from 'mqstate'

const url = process.env.MQSTATE_URL ?? 'mqtt://localhost:1883'
const alice = await Client.connect(url)
const bob = await Client.connect(url)
try {
  const a = alice.election('scheduler', 'alice', { termMs: 5_000 })
  const b = bob.election('scheduler', 'bob', { termMs: 5_000 })

  const leaders = a.watchLeader()
  await leaders.ready()

  const token = await a.campaign({ timeoutMs: 10_000 })
  console.log(`alice leads (fencing token ${token}); bob tries: ${await b.tryCampaign()}`)

  const bobWins = b.campaign({ timeoutMs: 10_000 })
  await a.resign()
  await bobWins
  console.log(`leader now: ${await a.leader()}`)

  for await (const event of leaders) {
    if (event.type === 'holder') console.log(`leadership: ${event.holder ?? '(nobody)'}`)
    if (event.type === 'holder' && event.holder === 'bob') break
  }
  await b.resign()
} finally {
  await alice.close()
  await bob.close()
}
