import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import type { Envelope } from './envelope.js';
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

// Compiled checkers for the fast path; `Value.Errors` only runs when a check fails.
const compiled = new Map<TSchema, TypeCheck<TSchema>>();
const checkerOf = (schema: TSchema): TypeCheck<TSchema> => {
  let c = compiled.get(schema);
  if (c === undefined) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  return c;
};

const describe = (problems: EventProblem[]): string => problems.map((p) => `${p.path}: ${p.message}`).join('; ');

/** Fast envelope-only check (no data schema), for buses and log readers. Pure: no I/O. */
export const isEnvelope = (value: unknown): value is Envelope => checkerOf(EnvelopeSchema).Check(value);

/** The problems of a value that is not an envelope (empty when it is one). Pure: no I/O. */
export const envelopeProblems = (value: unknown): EventProblem[] => problemsOf(EnvelopeSchema, value, '');

/**
 * Checks an untrusted value against the envelope schema and the data schema of its type.
 * Failures: `event.invalid` (each problem with its path, in the message and `details.problems`) and
 * `event.unknownType`. Pure: no I/O.
 */
export function validateEvent(envelope: unknown): Result<Envelope> {
  if (!checkerOf(EnvelopeSchema).Check(envelope)) {
    const problems = problemsOf(EnvelopeSchema, envelope, '');
    return fail('event.invalid', `The event envelope is invalid: ${describe(problems)}.`, {
      problems,
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
  const schema: TSchema = EventSchemas[env.type];
  if (!checkerOf(schema).Check(env.data)) {
    const dataProblems = problemsOf(schema, env.data, '/data');
    return fail('event.invalid', `The data of ${env.type} event ${env.id} is invalid: ${describe(dataProblems)}.`, {
      problems: dataProblems,
      type: env.type,
    });
  }
  return ok(env);
}
