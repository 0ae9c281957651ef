import type { QuerySet } from './retrievalSets.js';

/** The learning-from-calls measurement (filled in with the learning signal). */
export function learningBench(_sets: readonly QuerySet[]): void {
  console.log('\nlearning from calls: not measured yet');
}
