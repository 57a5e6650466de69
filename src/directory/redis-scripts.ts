// Lua run inside Redis, so that "only the owning incarnation may change a node's record"
// is checked and applied atomically. A refusal because another incarnation holds the node id
// answers {'CONFLICT', <its incarnation>}: a node that lost its registration learns who took it.

/** KEYS: node, members. ARGV: nodeId, incarnation, record JSON, ttl ms, channel. */
export const REGISTER = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local holder = cjson.decode(cur).incarnation
  if holder ~= ARGV[2] then return {'CONFLICT', holder} end
end
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
local holder = cjson.decode(cur).incarnation
if holder ~= ARGV[1] then return {'CONFLICT', holder} end
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

/**
 * KEYS: node, name, names-of-node. ARGV: incarnation, binding JSON, ttl ms, name, node key
 * prefix, nodeId. A binding is ours only if both node id and incarnation match: incarnations
 * are random, not unique across node ids.
 */
export const BIND = `
local cur = redis.call('GET', KEYS[1])
if not cur or cjson.decode(cur).incarnation ~= ARGV[1] then return 'GONE' end
local bound = redis.call('GET', KEYS[2])
if bound then
  local owner = cjson.decode(bound)
  local ours = owner.nodeId == ARGV[6] and owner.incarnation == ARGV[1]
  local ownerNode = redis.call('GET', ARGV[5] .. owner.nodeId)
  if not ours and ownerNode and cjson.decode(ownerNode).incarnation == owner.incarnation then
    return 'TAKEN'
  end
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return 'OK'
`;

/**
 * KEYS: name, names-of-node. ARGV: nodeId, incarnation, name, node key prefix. Deletes the
 * binding only if it is ours (node id and incarnation); one of another live node is 'TAKEN'; a
 * binding whose node is gone counts as no binding.
 */
export const UNBIND = `
local bound = redis.call('GET', KEYS[1])
if bound then
  local owner = cjson.decode(bound)
  if owner.nodeId ~= ARGV[1] or owner.incarnation ~= ARGV[2] then
    local ownerNode = redis.call('GET', ARGV[4] .. owner.nodeId)
    if ownerNode and cjson.decode(ownerNode).incarnation == owner.incarnation then return 'TAKEN' end
    return 'OK'
  end
  redis.call('DEL', KEYS[1])
end
redis.call('SREM', KEYS[2], ARGV[3])
return 'OK'
`;
