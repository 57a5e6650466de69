export type { Directory, DirectoryEvent, NameBinding, NodeRecord, RegistrationLostInfo } from './directory';
export { MemoryDirectory, MemoryDirectoryHub } from './memory-directory';
export { RedisDirectory } from './redis-directory';
export type { RedisDirectoryOptions } from './redis-directory';
export type { RedisCredentials, RedisTlsOptions } from './redis-connection';
