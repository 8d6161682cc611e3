// SPDX-License-Identifier: Apache-2.0
// A minimal pipelined beanstalkd connection for the fleet benchmark: every command returns a
// promise of its reply line (and body), commands are written without waiting for earlier
// replies, and replies are matched in order, as the protocol answers them. The commands issued
// in one turn of the event loop go out in one write (one syscall, one TCP segment where they
// fit), so the client's CPU per job stays far below the server's (see docs/benchmarks.md).
'use strict';
const net = require('node:net');

class BeanstalkConnection {
  // Resolves once connected to host:port.
  static open(host, port) {
    return new Promise((resolve, reject) => {
      const c = new BeanstalkConnection(net.connect({ host, port }));
      c.socket.once('connect', () => {
        c.socket.off('error', reject);
        c.socket.setNoDelay(true);
        resolve(c);
      });
      c.socket.once('error', reject);
    });
  }

  constructor(socket) {
    this.socket = socket;
    this.waiting = []; // {resolve, reject} per command sent, in order
    this.buf = Buffer.alloc(0);
    this.out = []; // commands not yet written: flushed together after this turn of the loop
    this.socket.on('data', (d) => this.onData(d));
    this.socket.on('error', (e) => this.fail(e));
    this.socket.on('close', () => this.fail(new Error('connection closed')));
  }

  // Sends one command line (and a body for put); resolves {line, words, body}.
  send(line, body) {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.out.push(body === undefined ? `${line}\r\n` : `${line}\r\n${body}\r\n`);
      if (this.out.length === 1) setImmediate(() => this.flush());
    });
  }

  flush() {
    if (!this.out.length || this.socket.destroyed) return;
    this.socket.write(this.out.join(''));
    this.out = [];
  }

  put(body, { pri = 0, delaySecs = 0, ttr = 60 } = {}) {
    return this.send(`put ${pri} ${delaySecs} ${ttr} ${Buffer.byteLength(body)}`, body);
  }

  onData(d) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    for (;;) {
      const eol = this.buf.indexOf('\r\n');
      if (eol < 0) return;
      const line = this.buf.toString('latin1', 0, eol);
      const words = line.split(' ');
      let body;
      let used = eol + 2;
      if (words[0] === 'RESERVED' || words[0] === 'FOUND' || words[0] === 'OK') {
        const bytes = Number(words[words.length - 1]);
        if (this.buf.length < used + bytes + 2) return; // body not all here yet
        body = this.buf.toString('latin1', used, used + bytes);
        used += bytes + 2;
      }
      this.buf = this.buf.subarray(used);
      const w = this.waiting.shift();
      if (w) w.resolve({ line, words, body });
    }
  }

  fail(e) {
    for (const w of this.waiting.splice(0)) w.reject(e);
  }

  // Closes the connection; commands still waiting for a reply are rejected.
  close() {
    this.out = [];
    this.socket.destroy();
    this.fail(new Error('connection closed'));
  }
}

// "host:port,host:port" -> [{host, port}]
function parseAddrs(s) {
  return s.split(',').map((a) => {
    const i = a.lastIndexOf(':');
    const port = Number(a.slice(i + 1));
    if (i <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
      process.stderr.write(`--addrs: '${a}' is not HOST:PORT with a port from 1 to 65535\n`);
      process.exit(2);
    }
    return { host: a.slice(0, i), port };
  });
}

module.exports = { BeanstalkConnection, parseAddrs };
