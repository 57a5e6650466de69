export { DTYPES, elementSize } from './dtypes';
export type { DType, NumericArray } from './dtypes';
export { toTensor, elementCount } from './tensor';
export type { Tensor } from './tensor';
export type { TensorMeta } from './codec';
