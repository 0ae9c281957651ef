/**
 * The load of the floors' CPU-per-event row (N concurrent sessions, each a turn of search + describe + call, embedded
 * bus, log off) as a fixed amount of work, for counting instructions: a quiet figure on a loaded machine, where CPU
 * time per event varies 30-50% from run to run.
 *
 *   valgrind --tool=cachegrind --cache-sim=no node --import tsx bench/engineInstructions.ts --blocks 2
 *   valgrind --tool=cachegrind --cache-sim=no node --import tsx bench/engineInstructions.ts --blocks 6
 *
 * Each run warms up (`--warm 4` blocks of one turn per session), then runs `--blocks` more and prints
 * `{"events", "cpuPerEvent"}`; the difference of the two runs' instruction counts (`I refs`) over the difference of
 * their events is the instructions per event with start-up, compilation and warm-up taken out. Run it in two
 * checkouts to compare them (the same count of events in both).
 */
import { cpuUs, openScriptedLoad } from './lib/load.js';
import { optionReader } from './lib/args.js';

const args = process.argv.slice(2);
const opt = optionReader(args);
const SESSIONS = Number(opt('sessions', '50'));
const BLOCKS = Number(opt('blocks', '2'));
const WARM = Number(opt('warm', '4'));

const { bus, blocks, close } = await openScriptedLoad(SESSIONS);
await blocks(WARM);
const e0 = bus.stats().published;
const c0 = cpuUs();
await blocks(BLOCKS);
const events = bus.stats().published - e0;
console.log(JSON.stringify({ events, cpuPerEvent: (cpuUs() - c0) / events }));
await close();
