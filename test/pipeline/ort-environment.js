// Jest environment for tests that run onnxruntime-node. Its native binding creates output
// arrays in Node's own realm, while onnxruntime-common, loaded inside the test sandbox, checks
// them with `instanceof` against the sandbox's constructors and rejects every output. Sharing
// the outer typed-array constructors with the sandbox makes both sides agree.
const { TestEnvironment } = require('jest-environment-node');

const TYPED_ARRAYS = [
  'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
  'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array',
];

class OrtEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of TYPED_ARRAYS) this.global[name] = globalThis[name];
  }
}

module.exports = OrtEnvironment;
