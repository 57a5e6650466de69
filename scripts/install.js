// npm's install step for rvma: use a prebuilt addon from prebuilds/<platform>-<arch>/ when one
// loads on this machine, otherwise compile the addon from native/ with cmake-js. A checkout
// compiles its own sources, whatever prebuilds/ holds.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const dir = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`);
// The one with rdma-core first: it needs libibverbs1 and librdmacm1 at load time.
const prebuilt = ['rvma-verbs.node', 'rvma.node'].map((name) => path.join(dir, name)).filter((file) => fs.existsSync(file));

// A checkout builds its own sources, whatever prebuilds/ holds.
const checkout = fs.existsSync(path.join(root, '.git'));
const reasons = [];
for (const file of checkout ? [] : prebuilt) {
  // Loaded in a child process: a library missing here must not take down this one.
  const probe = spawnSync(process.execPath, ['-e', 'require(process.argv[1])', file], { encoding: 'utf8', timeout: 30_000 });
  if (probe.status === 0) {
    console.error(`rvma: using the prebuilt addon ${path.relative(root, file)}`);
    process.exit(0);
  }
  reasons.push(`${path.basename(file)}: ${(probe.stderr.match(/Error: (.*)/) || [, 'does not load'])[1]}`);
}

const why = checkout
  ? 'a checkout builds from its sources'
  : prebuilt.length
    ? `no prebuilt addon loads here (${reasons.join('; ')})`
    : `no prebuilt addon for ${process.platform}-${process.arch}`;
console.error(`rvma: compiling the native addon (C++17, about a minute; needs cmake, g++ and pkg-config): ${why}`);
const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
const build = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
process.exit(build.status === null ? 1 : build.status);
