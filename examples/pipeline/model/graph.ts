// A minimal builder for ONNX graphs over onnx-proto's protobuf messages: named nodes,
// float32/int64 initializers, and inputs/outputs with symbolic dimensions.
import { onnx } from 'onnx-proto';

// onnx-proto 8.0.1 carries ONNX 1.10's schema: IR version 8, default-domain opset 15.
const IR_VERSION = 8;
const OPSET = 15;

export type Dim = number | string;
type AttrValue = number | number[];

const { DataType } = onnx.TensorProto;
const { AttributeType } = onnx.AttributeProto;

function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

function valueInfo(name: string, elemType: number, dims: Dim[]): onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: AttrValue): onnx.IAttributeProto {
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: value };
  return { name, type: AttributeType.INT, i: value };
}

export class GraphBuilder {
  private readonly nodes: onnx.INodeProto[] = [];
  private readonly initializers: onnx.ITensorProto[] = [];
  private readonly inputs: onnx.IValueInfoProto[] = [];
  private readonly outputs: onnx.IValueInfoProto[] = [];
  private counter = 0;

  constructor(private readonly name: string) {}

  floatInput(name: string, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, DataType.FLOAT, dims));
    return name;
  }

  int64Input(name: string, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, DataType.INT64, dims));
    return name;
  }

  floatOutput(name: string, dims: Dim[]): void {
    this.outputs.push(valueInfo(name, DataType.FLOAT, dims));
  }

  floatWeight(name: string, dims: number[], data: Float32Array): string {
    if (data.length !== dims.reduce((a, b) => a * b, 1)) throw new Error(`weight ${name}: ${data.length} values for [${dims}]`);
    this.initializers.push({ name, dims, dataType: DataType.FLOAT, rawData: bytesOf(data) });
    return name;
  }

  int64Const(values: number[]): string {
    const name = `const${this.counter++}`;
    const data = BigInt64Array.from(values, (v) => BigInt(v));
    this.initializers.push({ name, dims: [values.length], dataType: DataType.INT64, rawData: bytesOf(data) });
    return name;
  }

  floatScalar(value: number): string {
    const name = `const${this.counter++}`;
    this.initializers.push({ name, dims: [], dataType: DataType.FLOAT, rawData: bytesOf(Float32Array.of(value)) });
    return name;
  }

  /** Adds one node; returns its output name (`output` if given, so graph outputs can be named). */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, output?: string): string {
    const out = output ?? `${opType.toLowerCase()}${this.counter++}`;
    this.nodes.push({
      opType,
      name: `${opType}_${this.nodes.length}`,
      input: inputs,
      output: [out],
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
    return out;
  }

  encode(): Uint8Array {
    const model: onnx.IModelProto = {
      irVersion: IR_VERSION,
      opsetImport: [{ domain: '', version: OPSET }],
      producerName: 'rvma-pipeline-example',
      graph: {
        name: this.name,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      },
    };
    const err = onnx.ModelProto.verify(model);
    if (err) throw new Error(`ONNX model ${this.name}: ${err}`);
    return onnx.ModelProto.encode(model).finish();
  }
}
