// One SET/GET/KEYNOTIFY round against a state store, spoken with mqtt.js (MQTT 5).
// Usage: node mqttjs_round.js HOST PORT CLIENT_ID [--no-notify-subscription]
// Exits 0 after the round succeeded; prints what went wrong and exits 1 otherwise.
'use strict';
const crypto = require('node:crypto');
const mqtt = require('mqtt');

const REQUEST_TOPIC = 'statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke';
const NOTIFY_PREFIX = 'clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8';
const WAIT_MS = 10000;

const [host, port, clientId, ...flags] = process.argv.slice(2);
const subscribeNotifications = !flags.includes('--no-notify-subscription');
const hex = (buf) => Buffer.from(buf).toString('hex').toUpperCase();
const responseTopic = `clients/${clientId}/services/${REQUEST_TOPIC}/response`;
const notifyFilter = `${NOTIFY_PREFIX}/${hex(clientId)}/command/notify/+`;

function resp(...args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const b = Buffer.from(arg);
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

function fail(message) {
  console.error(`mqtt.js: ${message}`);
  process.exit(1);
}

const timer = setTimeout(() => fail('the round did not finish in time'), 4 * WAIT_MS);
const waiting = new Map();
const notifications = [];
let notified = null;

const client = mqtt.connect({
  host, port: Number(port), clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: WAIT_MS,
});
client.on('error', (e) => fail(`connection error: ${e.message}`));
client.on('message', (topic, payload, packet) => {
  const correlation = packet.properties && packet.properties.correlationData;
  const id = correlation && Buffer.from(correlation).toString('hex');
  if (id && waiting.has(id)) {
    waiting.get(id)(packet);
    waiting.delete(id);
  } else {
    notifications.push({ topic, payload });
    if (notified) notified();
  }
});

function request(...args) {
  const correlation = crypto.randomBytes(16);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no response to ${args[0]}`)), WAIT_MS);
    waiting.set(correlation.toString('hex'), (packet) => {
      clearTimeout(t);
      const user = (packet.properties && packet.properties.userProperties) || {};
      if (user.__stat !== '200') reject(new Error(`${args[0]} answered ${JSON.stringify(user)}`));
      else resolve(Buffer.from(packet.payload).toString('latin1'));
    });
    client.publish(REQUEST_TOPIC, resp(...args), {
      qos: 1,
      properties: {
        responseTopic,
        correlationData: correlation,
        contentType: 'application/octet-stream',
        messageExpiryInterval: 10,
        userProperties: {
          __srcId: clientId,
          __ts: `${String(Date.now()).padStart(15, '0')}:00000:${clientId}`,
          __protVer: '1.0',
        },
      },
    });
  });
}

function expect(got, want) {
  if (got !== want) fail(`got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

async function nextNotification() {
  if (notifications.length === 0) {
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no notification')), WAIT_MS);
      notified = () => { clearTimeout(t); notified = null; resolve(); };
    });
  }
  return notifications.shift();
}

client.on('connect', async () => {
  try {
    const filters = { [responseTopic]: { qos: 1 } };
    if (subscribeNotifications) filters[notifyFilter] = { qos: 1 };
    await client.subscribeAsync(filters);
    const key = `mqttjs-${clientId}`;
    expect(await request('SET', key, 'v1'), '+OK\r\n');
    expect(await request('GET', key), '$2\r\nv1\r\n');
    expect(await request('KEYNOTIFY', key), '+OK\r\n');
    expect(await request('SET', key, 'v2'), '+OK\r\n');
    const note = await nextNotification();
    expect(note.topic, `${NOTIFY_PREFIX}/${hex(clientId)}/command/notify/${hex(key)}`);
    expect(Buffer.from(note.payload).toString('latin1'), '*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nv2\r\n');
    clearTimeout(timer);
    await client.endAsync();
    console.log('mqtt.js: SET/GET/KEYNOTIFY round ok');
  } catch (e) {
    fail(e.message);
  }
});
