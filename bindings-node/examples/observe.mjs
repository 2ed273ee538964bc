// Observe a key: every change arrives in order through `for await`; leaving the loop
// unregisters (the client sends KEYNOTIFY … STOP).
// Run: MQSTATE_URL=mqtt://127.0.0.1:1883 node examples/observe.mjs
import { Client } from 'mqstate'

const client = await Client.connect(process.env.MQSTATE_URL ?? 'mqtt://localhost:1883')
try {
  const changes = client.observe('thermostat')
  await changes.ready() // registered: every later change is delivered

  const writer = (async () => {
    for (const celsius of ['20.5', '21.0', '21.5']) await client.set('thermostat', celsius)
    await client.delete('thermostat')
  })()

  for await (const event of changes) {
    if (event.type === 'change') {
      console.log(event.kind === 'set' ? `thermostat = ${event.text}` : 'thermostat deleted')
      if (event.kind === 'delete') break
    } else {
      console.log(`connection: ${event.type}`) // 'degraded' / 'restored' (or lock events)
    }
  }
  await writer
} finally {
  await client.close()
}
