import type { RedisClient } from '../../src/adapters/redis/client.ts';

/**
 * What a measurement cost the Redis server itself, from its own accounting: command execution time
 * (`INFO commandstats`) and the CPU time of its main thread (`INFO cpu`, which adds reading, parsing and
 * answering the requests). Neither includes the client or the network wait, so on a loaded machine they
 * still compare a Lua script with a plain SET; command time is wall time inside Redis and can still be
 * stretched when the server is preempted, main-thread CPU cannot. One node: the benches run a single
 * redis-server.
 */

/** Server cost of one measured phase, in microseconds. */
export interface ServerCost {
  commandMicros: number;
  mainThreadCpuMicros: number;
}

/** Commands the measurement itself sends; not counted. */
const OWN_COMMANDS = new Set(['config', 'info']);
/**
 * Script commands. The commands a script calls are listed in commandstats too, and their time is already
 * inside the script's: when scripts ran, only these are counted (the benches never mix scripts with plain
 * top-level commands in one measurement).
 */
const SCRIPT_COMMANDS = new Set(['eval', 'evalsha']);

async function commandMicros(client: RedisClient): Promise<number> {
  const text = await client.info('commandstats');
  const micros = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^cmdstat_([^:]+):.*\busec=(\d+)/.exec(line.trim());
    const name = match?.[1]?.toLowerCase();
    if (name !== undefined && match?.[2] !== undefined && !OWN_COMMANDS.has(name))
      micros.set(name, Number(match[2]));
  }
  const scripts = [...micros].filter(([name]) => SCRIPT_COMMANDS.has(name));
  const counted = scripts.length > 0 ? scripts : [...micros];
  return counted.reduce((total, [, usec]) => total + usec, 0);
}

async function mainThreadCpuMicros(client: RedisClient): Promise<number> {
  const text = await client.info('cpu');
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:([0-9.]+)`, 'm').exec(text);
    if (match?.[1] === undefined) throw new Error(`read INFO cpu: ${name} is missing`);
    return Number(match[1]) * 1e6;
  };
  return field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread');
}

/**
 * Starts measuring (resets the command statistics); the returned function answers what the server spent
 * since. One measurement at a time per server.
 */
export async function startServerCost(client: RedisClient): Promise<() => Promise<ServerCost>> {
  await client.config('RESETSTAT');
  const cpuBefore = await mainThreadCpuMicros(client);
  return async () => {
    const cpuAfter = await mainThreadCpuMicros(client);
    return { commandMicros: await commandMicros(client), mainThreadCpuMicros: cpuAfter - cpuBefore };
  };
}
