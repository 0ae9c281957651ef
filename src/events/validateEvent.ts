import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Envelope } from '../bus/types.js';
import { fail, ok, type Result } from '../shared/index.js';
import { EnvelopeSchema } from './envelope.js';
import { EventSchemas, isEventType } from './registry.js';

/** One schema violation: a JSON pointer into the envelope (`/data/sources/0/toolCount`) and what is wrong. */
export interface EventProblem {
  path: string;
  message: string;
}

const problemsOf = (schema: TSchema, value: unknown, prefix: string): EventProblem[] =>
  [...Value.Errors(schema, value)].map((e) => ({ path: `${prefix}${e.path}` || '/', message: e.message }));

const describe = (problems: EventProblem[]): string =>
  problems.map((p) => `${p.path}: ${p.message}`).join('; ');

/**
 * Checks an untrusted value against the envelope schema and the data schema of its type.
 * Failures: `event.invalid` (each problem with its path, in the message and `details.problems`) and
 * `event.unknownType`. Pure: no I/O.
 */
export function validateEvent(envelope: unknown): Result<Envelope> {
  const envelopeProblems = problemsOf(EnvelopeSchema, envelope, '');
  if (envelopeProblems.length > 0) {
    return fail('event.invalid', `The event envelope is invalid: ${describe(envelopeProblems)}.`, {
      problems: envelopeProblems,
    });
  }
  const env = envelope as Envelope;
  if (!isEventType(env.type)) {
    return fail(
      'event.unknownType',
      `"${env.type}" is not a known event type (event ${env.id}). Known types: ${Object.keys(EventSchemas).join(', ')}.`,
      { type: env.type },
    );
  }
  const dataProblems = problemsOf(EventSchemas[env.type], env.data, '/data');
  if (dataProblems.length > 0) {
    return fail('event.invalid', `The data of ${env.type} event ${env.id} is invalid: ${describe(dataProblems)}.`, {
      problems: dataProblems,
      type: env.type,
    });
  }
  return ok(env);
}
