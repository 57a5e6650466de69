#!/usr/bin/env node
// Runs a command in the other guest of a pair as if here (remote-exec-server.js runs it there):
// its stdout, stderr, IPC messages (when this process has an IPC channel, as a forked child
// does) and exit status are this process's own. A signal sent here goes there; when this
// process is killed, the connection closes and the remote command is killed too. So a test
// helper that takes a command prefix runs a child in the other guest with
//   [process.execPath, 'test/pair/remote-exec.js', 'HOST:PORT']
//
//   node remote-exec.js HOST:PORT COMMAND [ARGS...]
'use strict';
const net = require('node:net');
const readline = require('node:readline');

const [target, ...argv] = process.argv.slice(2);
const [host, port] = target.split(':');
// What the remote command should see of this environment: the suites' knobs.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(RVMA_|NODE_DEBUG$|NODE_OPTIONS$|CI$)/.test(k)));

const socket = net.connect(Number(port), host, () => {
  socket.setNoDelay(true);
  socket.write(`${JSON.stringify({ argv, cwd: process.cwd(), env, ipc: typeof process.send === 'function' })}\n`);
});
const send = (message) => socket.write(`${JSON.stringify(message)}\n`);
process.on('message', (ipc) => send({ ipc }));
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => send({ signal }));

let exit;
readline.createInterface({ input: socket }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.stdout !== undefined) process.stdout.write(m.stdout);
  else if (m.stderr !== undefined) process.stderr.write(m.stderr);
  else if (m.ipc !== undefined) process.send?.(m.ipc);
  else if (m.exit !== undefined) exit = m;
});
const finish = () => {
  if (!exit) {
    process.stderr.write(`remote-exec: the connection to ${target} ended before the command did\n`);
    process.exit(125);
  }
  // Written output first, then the same end as the remote command.
  process.stdout.write('', () => {
    if (exit.signal) {
      process.removeAllListeners(exit.signal);
      process.kill(process.pid, exit.signal);
    }
    process.exit(exit.exit ?? 1);
  });
};
socket.on('close', finish);
socket.on('error', (e) => {
  process.stderr.write(`remote-exec: ${target}: ${e.message}\n`);
});
