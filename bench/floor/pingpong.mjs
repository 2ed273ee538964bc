// The transport floor of a Node client (docs/benchmarks.md, "The floor of each host"):
// 64-byte round trips to `pingpong serve`, one in flight, with no MQTT and no library: each
// round trip writes, then awaits a Promise that the socket's 'data' event resolves.
//   node pingpong.mjs PORT SECONDS      prints "nodenet 1 OPS_PER_S CPU_US_PER_OP"
import net from 'node:net';

const [port, seconds] = [Number(process.argv[2]), Number(process.argv[3])];
const SIZE = 64;
const message = Buffer.alloc(SIZE, 'x');
const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));

let got = 0;
let resolve = null;
socket.on('data', (chunk) => {
  got += chunk.length;
  if (got >= SIZE && resolve) {
    got -= SIZE;
    const r = resolve;
    resolve = null;
    r();
  }
});
const roundTrip = () =>
  new Promise((r) => {
    resolve = r;
    socket.write(message);
  });

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
for (const end = performance.now() + 1000; performance.now() < end; ) await roundTrip();
let done = 0;
const t0 = performance.now();
const c0 = cpu();
for (const end = t0 + seconds * 1000; performance.now() < end; done++) await roundTrip();
const elapsed = (performance.now() - t0) / 1000;
console.log(`nodenet 1 ${(done / elapsed).toFixed(0)} ${((cpu() - c0) / done).toFixed(1)}`);
socket.destroy();
