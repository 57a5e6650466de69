#!/usr/bin/env node
// Runs in the second guest of a pair (scripts/rdma-vm/pair.sh): starts, for each connection from
// the first guest, the command it names, and relays its stdout, stderr, IPC messages and exit
// over the connection (JSON lines; remote-exec.js is the other end). A command whose connection
// closes is killed, so nothing outlives the test that started it. Test harness only: it runs
// any command for anyone who reaches the private wire between the guests.
//
//   node remote-exec-server.js ADDRESS PORT
'use strict';
const net = require('node:net');
const readline = require('node:readline');
const { spawn } = require('node:child_process');

const [address, port] = [process.argv[2], Number(process.argv[3])];

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  let child;
  const send = (message) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
  };
  const onRequest = (request) => {
    child = spawn(request.argv[0], request.argv.slice(1), {
      cwd: request.cwd,
      env: { ...process.env, ...request.env },
      stdio: ['ignore', 'pipe', 'pipe', ...(request.ipc ? ['ipc'] : [])],
    });
    send({ pid: child.pid });
    child.stdout.on('data', (b) => send({ stdout: b.toString('utf8') }));
    child.stderr.on('data', (b) => send({ stderr: b.toString('utf8') }));
    child.on('message', (ipc) => send({ ipc }));
    child.on('error', (e) => send({ stderr: `remote-exec: ${e.message}\n` }));
    child.on('close', (code, signal) => {
      send({ exit: code, signal });
      socket.end();
    });
  };
  readline.createInterface({ input: socket }).on('line', (line) => {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return socket.destroy(); // not the other end of remote-exec.js
    }
    if (!child) onRequest(message);
    else if (message.ipc !== undefined && child.connected) child.send(message.ipc);
    else if (message.signal) child.kill(message.signal);
  });
  const gone = () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  socket.on('close', gone);
  socket.on('error', gone);
});
server.listen(port, address, () => console.log(`remote-exec listening at ${address}:${port}`));
