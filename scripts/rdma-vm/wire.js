#!/usr/bin/env node
// The wire between the two guests of a pair (pair.sh): each guest's NIC sends its Ethernet
// frames as UDP datagrams to a port of this relay on the host's loopback, which passes them to
// the other guest, dropping or reordering a share of them as the control file says.
//
//   node wire.js DIR
//
// Writes DIR/ports ("A_GUEST A_WIRE B_GUEST B_WIRE": each guest's own port and the port of the
// wire it sends to) once both sockets are bound. Reads DIR/control whenever it changes, JSON
// { "loss": percent, "reorder": percent } (both default 0), so that a test in a guest can make
// the wire lossy through a shared folder; writes DIR/stats ({ forwarded, dropped, reordered,
// control }) after each change and twice a second.
'use strict';
const dgram = require('node:dgram');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.argv[2];
if (!dir) {
  console.error('usage: wire.js DIR');
  process.exit(2);
}

const stats = { forwarded: 0, dropped: 0, reordered: 0, control: { loss: 0, reorder: 0 } };
let control = stats.control;

function readControl() {
  let text;
  try {
    text = fs.readFileSync(path.join(dir, 'control'), 'utf8');
  } catch {
    return; // none yet: a clean wire
  }
  try {
    const c = JSON.parse(text);
    const share = (v) => (Number.isFinite(v) && v >= 0 && v <= 100 ? v : 0);
    control = { loss: share(c.loss), reorder: share(c.reorder) };
  } catch {
    return; // half written: the next change completes it
  }
  stats.control = control;
  writeStats();
}

function writeStats() {
  const file = path.join(dir, 'stats');
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(stats));
  fs.renameSync(`${file}.tmp`, file);
}

// Ports the guests send from; their sockets are QEMU's, so a port is picked free here first.
async function freePort() {
  const s = dgram.createSocket('udp4');
  await new Promise((resolve) => s.bind(0, '127.0.0.1', resolve));
  const { port } = s.address();
  s.close();
  return port;
}

async function main() {
  // Buffers as large as the host allows: a burst of frames from one guest must wait here, not be
  // dropped, while the other guest's emulated CPUs catch up.
  const socket = () => dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
  const sockets = [socket(), socket()];
  await Promise.all(sockets.map((s) => new Promise((resolve) => s.bind(0, '127.0.0.1', resolve))));
  const guests = [await freePort(), await freePort()];
  // A frame held back to be sent after the next one in its direction (reordering).
  const held = [undefined, undefined];
  for (const from of [0, 1]) {
    const to = 1 - from;
    sockets[from].on('message', (frame) => {
      const roll = Math.random() * 100;
      if (roll < control.loss) {
        stats.dropped++;
        return;
      }
      const send = (f) => {
        stats.forwarded++;
        sockets[to].send(f, guests[to], '127.0.0.1');
      };
      if (held[from] === undefined && Math.random() * 100 < control.reorder) {
        held[from] = frame;
        stats.reordered++;
        // Late rather than lost when no frame follows it soon.
        setTimeout(() => {
          if (held[from] !== frame) return;
          held[from] = undefined;
          send(frame);
        }, 5);
        return;
      }
      send(frame);
      if (held[from] !== undefined) {
        send(held[from]);
        held[from] = undefined;
      }
    });
  }
  readControl();
  fs.watchFile(path.join(dir, 'control'), { interval: 100 }, readControl);
  setInterval(writeStats, 500).unref();
  const ports = `${guests[0]} ${sockets[0].address().port} ${guests[1]} ${sockets[1].address().port}\n`;
  fs.writeFileSync(path.join(dir, 'ports.tmp'), ports);
  fs.renameSync(path.join(dir, 'ports.tmp'), path.join(dir, 'ports'));
  writeStats();
  for (const signal of ['SIGTERM', 'SIGINT']) {
    process.on(signal, () => {
      writeStats();
      process.exit(0);
    });
  }
}

main().catch((e) => {
  console.error(`wire: ${e.stack || e}`);
  process.exit(1);
});
