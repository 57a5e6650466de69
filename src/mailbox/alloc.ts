// Native memory for the application's own buffers (what mailbox.post(size) and
// registerRegion(size) allocate): the memory that large puts are fastest from.
import { native } from '../native';
import { checkInteger } from './validate';

/**
 * Zeroed, page-aligned native memory of `size` bytes, freed when the array is collected.
 * From 2 MiB on it starts on a 2 MiB boundary and is backed by transparent huge pages where
 * the kernel allows (THP "madvise" or "always"): a large put from it is copied faster than
 * from an ordinary Buffer (over shm the receiver pulls a 16 MiB put from it at about 1.8x the
 * speed, measured by bench:shm). Use it for tensors or staging buffers that are put often.
 */
export function allocBuffer(size: number): Uint8Array {
  return new Uint8Array(native().allocBuffer(checkInteger('allocBuffer', 'size', size, 0, 2 ** 40)));
}
