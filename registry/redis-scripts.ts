// Lua run inside Redis, so that "only the owning incarnation may change a node's record"
// is checked and applied atomically.

/** KEYS: node, members. ARGV: nodeId, incarnation, record JSON, ttl ms, channel. */
export const REGISTER = `
local cur = redis.call('GET', KEYS[1])
if cur and cjson.decode(cur).incarnation ~= ARGV[2] then return 'CONFLICT' end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[1])
local kind = 'join'
if cur then kind = 'update' end
redis.call('PUBLISH', ARGV[5], kind .. '\\n' .. ARGV[3])
return 'OK'
`;

/** KEYS: node, names-of-node. ARGV: incarnation, ttl ms, name key prefix. */
export const HEARTBEAT = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 'GONE' end
if cjson.decode(cur).incarnation ~= ARGV[1] then return 'CONFLICT' end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local names = redis.call('SMEMBERS', KEYS[2])
if #names > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
for _, n in ipairs(names) do redis.call('PEXPIRE', ARGV[3] .. n, ARGV[2]) end
return 'OK'
`;

/** KEYS: node, members, names-of-node. ARGV: nodeId, incarnation, channel, name key prefix. */
export const DEREGISTER = `
local cur = redis.call('GET', KEYS[1])
if not cur or cjson.decode(cur).incarnation ~= ARGV[2] then return 'GONE' end
for _, n in ipairs(redis.call('SMEMBERS', KEYS[3])) do redis.call('DEL', ARGV[4] .. n) end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], 'leave\\n' .. cur)
return 'OK'
`;

/** KEYS: node, name, names-of-node. ARGV: incarnation, binding JSON, ttl ms, name, node key prefix. */
export const BIND = `
local cur = redis.call('GET', KEYS[1])
if not cur or cjson.decode(cur).incarnation ~= ARGV[1] then return 'GONE' end
local bound = redis.call('GET', KEYS[2])
if bound then
  local owner = cjson.decode(bound)
  local ownerNode = redis.call('GET', ARGV[5] .. owner.nodeId)
  if ownerNode and cjson.decode(ownerNode).incarnation == owner.incarnation and owner.incarnation ~= ARGV[1] then
    return 'TAKEN'
  end
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return 'OK'
`;
