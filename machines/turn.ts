import { assign, fromPromise, setup } from 'xstate';
import type { Catalog } from '../src/catalog/index.js';
import type { ModeSchema } from '../src/events/index.js';
import type { Result, ToolSearchError } from '../src/shared/index.js';
import { describeError } from './describeError.js';
import { notProvided } from './notProvided.js';

/**
 * The turn: one request of one session, from policy to the tools the model invoked.
 *
 *   resolvePolicy -> listSources -> index -> expose -> execute -> completed | failed
 *
 * Pure: every I/O step is a named actor (`resolvePolicy`, `listSources`, `indexCatalog`, `expose`,
 * `executeStep`) that the gateway provides with `turnMachine.provide({ actors })`. Each placeholder rejects,
 * so a turn started without its actors ends in `failed` (fail closed). Any actor that rejects fails the turn,
 * with the stage and reason in `context.error`; expected failures of a step (a blocked or failed call) are
 * not rejections but `Result` values, which go to whoever sent the step (the machine only counts steps served).
 *
 * Steps come from outside as events: `STEP` queues a step (steps that arrive before `execute` wait in the
 * queue), the queue runs one step at a time in arrival order, `END` completes the turn once the queue is
 * drained, `ABORT` fails it at once and aborts the `signal` of the actor in flight. Time and ids come in
 * through input and events; the machine never reads a clock.
 */

export interface TurnInput {
  sessionId: string;
  turnId: string;
  /** The gateway's handle of this turn, handed to every actor unchanged; the machine does not look inside. */
  turn: unknown;
}

/** What indexing produced (the index itself stays with the search capability). */
export interface CatalogInfo {
  size: number;
  fingerprint: string;
  /** true when an index with the same fingerprint was reused. */
  cached?: boolean;
  /** The search index, for the steps; the machine does not look inside. */
  index?: unknown;
}

/**
 * The surface the model sees. `mode` is the effective mode; when it differs from `requestedMode` (code falls
 * back to tools, a harness with its own tool search gets direct exposure) `reason` says why.
 */
export interface ExposureSummary {
  mode: ModeSchema;
  requestedMode?: ModeSchema;
  /** Names of the exposed tools, as the provider receives them. */
  tools: string[];
  /** Serialized size of the exposed definitions. */
  bytes: number;
  reason?: string;
  /** The exposure as the gateway built it (definitions, name map), for the steps; the machine does not look inside. */
  surface?: unknown;
}

/** One invocation by the model of an exposed tool. `args` is as the model sent it. */
export interface TurnStep {
  stepId: string;
  tool: string;
  args: unknown;
}

export type TurnStage = 'resolvePolicy' | 'listSources' | 'index' | 'expose' | 'execute';

export interface TurnError extends ToolSearchError {
  stage: TurnStage;
}

export interface TurnContext {
  sessionId: string;
  turnId: string;
  turn: unknown;
  /** Whatever `resolvePolicy` returned; handed on unchanged to the later actors. */
  policy?: unknown;
  catalog?: Catalog;
  catalogInfo?: CatalogInfo;
  exposure?: ExposureSummary;
  /** Steps received and not yet started, in arrival order. */
  queue: TurnStep[];
  /** Steps served so far. */
  served: number;
  /** END was received: no more steps are accepted, the turn completes once the queue is drained. */
  ending: boolean;
  error?: TurnError;
}

export type TurnEvent =
  { type: 'STEP'; stepId: string; tool: string; args: unknown } | { type: 'END' } | { type: 'ABORT'; reason: string };

export interface TurnOutput {
  outcome: 'completed' | 'failed';
  sessionId: string;
  turnId: string;
  exposure?: ExposureSummary;
  catalogInfo?: CatalogInfo;
  served: number;
  error?: TurnError;
}

/** What every turn actor receives besides its own fields. */
export interface TurnActorBase {
  sessionId: string;
  turnId: string;
  turn: unknown;
}
export type ListSourcesInput = TurnActorBase & { policy: unknown };
export type IndexCatalogInput = TurnActorBase & { policy: unknown; catalog: Catalog };
export type ExposeInput = TurnActorBase & { policy: unknown; catalog: Catalog; catalogInfo: CatalogInfo };
export type ExecuteStepInput = TurnActorBase & {
  policy: unknown;
  catalog: Catalog;
  catalogInfo: CatalogInfo;
  exposure: ExposureSummary;
  step: TurnStep;
};

const failedAt = (stage: TurnStage, error: unknown): TurnError => ({
  stage,
  ...describeError(error, `turn.${stage}Failed`, `turn failed at ${stage}`),
});

const base = (context: TurnContext): TurnActorBase => ({
  sessionId: context.sessionId,
  turnId: context.turnId,
  turn: context.turn,
});

/**
 * Reads a value an earlier stage stored. The state order guarantees it is there; if it is not, the actor
 * input throws, the invoke errors and the turn fails: never runs on without it.
 */
function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} missing from the turn context`);
  return value;
}

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    input: {} as TurnInput,
    events: {} as TurnEvent,
    output: {} as TurnOutput,
  },
  actors: {
    resolvePolicy: fromPromise<unknown, TurnActorBase>(notProvided('resolvePolicy')),
    listSources: fromPromise<Catalog, ListSourcesInput>(notProvided('listSources')),
    indexCatalog: fromPromise<CatalogInfo, IndexCatalogInput>(notProvided('indexCatalog')),
    expose: fromPromise<ExposureSummary, ExposeInput>(notProvided('expose')),
    executeStep: fromPromise<Result<unknown>, ExecuteStepInput>(notProvided('executeStep')),
  },
  actions: {
    /** ABORT is handled per state so the error names the stage it stopped. */
    recordAbort: assign(({ context, event }, params: { stage: TurnStage }) => ({
      error: {
        stage: params.stage,
        code: 'turn.aborted',
        message: `turn ${context.turnId} aborted at ${params.stage}: ${
          event.type === 'ABORT' ? event.reason : 'no reason given'
        }`,
      },
    })),
  },
  guards: {
    hasQueuedStep: ({ context }) => context.queue.length > 0,
    isEnding: ({ context }) => context.ending,
    acceptsSteps: ({ context }) => !context.ending,
  },
}).createMachine({
  id: 'turn',
  context: ({ input }) => ({
    sessionId: input.sessionId,
    turnId: input.turnId,
    turn: input.turn,
    queue: [],
    served: 0,
    ending: false,
  }),
  initial: 'resolvePolicy',
  // Steps and the end may arrive at any time; they wait in the context until `execute` serves them.
  on: {
    STEP: {
      guard: 'acceptsSteps',
      actions: assign({
        queue: ({ context, event }) => [...context.queue, { stepId: event.stepId, tool: event.tool, args: event.args }],
      }),
    },
    END: { actions: assign({ ending: true }) },
  },
  states: {
    resolvePolicy: {
      on: { ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'resolvePolicy' } } } },
      invoke: {
        id: 'resolvePolicy',
        src: 'resolvePolicy',
        input: ({ context }) => base(context),
        onDone: { target: 'listSources', actions: assign({ policy: ({ event }) => event.output }) },
        onError: {
          target: 'failed',
          actions: assign({ error: ({ event }) => failedAt('resolvePolicy', event.error) }),
        },
      },
    },
    listSources: {
      on: { ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'listSources' } } } },
      invoke: {
        id: 'listSources',
        src: 'listSources',
        input: ({ context }) => ({ ...base(context), policy: context.policy }),
        onDone: { target: 'index', actions: assign({ catalog: ({ event }) => event.output }) },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => failedAt('listSources', event.error) }) },
      },
    },
    index: {
      on: { ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'index' } } } },
      invoke: {
        id: 'indexCatalog',
        src: 'indexCatalog',
        input: ({ context }) => ({
          ...base(context),
          policy: context.policy,
          catalog: required(context.catalog, 'catalog'),
        }),
        onDone: { target: 'expose', actions: assign({ catalogInfo: ({ event }) => event.output }) },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => failedAt('index', event.error) }) },
      },
    },
    expose: {
      on: { ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'expose' } } } },
      invoke: {
        id: 'expose',
        src: 'expose',
        input: ({ context }) => ({
          ...base(context),
          policy: context.policy,
          catalog: required(context.catalog, 'catalog'),
          catalogInfo: required(context.catalogInfo, 'catalogInfo'),
        }),
        onDone: { target: 'execute', actions: assign({ exposure: ({ event }) => event.output }) },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => failedAt('expose', event.error) }) },
      },
    },
    execute: {
      on: { ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'execute' } } } },
      initial: 'waiting',
      states: {
        // Eventless: re-checked after every event, so a queued STEP starts at once and END completes
        // only when nothing is queued or in flight.
        waiting: {
          always: [
            { guard: 'hasQueuedStep', target: 'running' },
            { guard: 'isEnding', target: '#turn.completed' },
          ],
        },
        running: {
          invoke: {
            id: 'executeStep',
            src: 'executeStep',
            input: ({ context }) => ({
              ...base(context),
              policy: context.policy,
              catalog: required(context.catalog, 'catalog'),
              catalogInfo: required(context.catalogInfo, 'catalogInfo'),
              exposure: required(context.exposure, 'exposure'),
              step: required(context.queue[0], 'queued step'),
            }),
            onDone: {
              target: 'waiting',
              actions: assign(({ context }) => ({ queue: context.queue.slice(1), served: context.served + 1 })),
            },
            onError: {
              target: '#turn.failed',
              actions: assign({ error: ({ event }) => failedAt('execute', event.error) }),
            },
          },
        },
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
  },
  output: ({ context }) => ({
    outcome: context.error === undefined ? 'completed' : 'failed',
    sessionId: context.sessionId,
    turnId: context.turnId,
    ...(context.exposure === undefined ? {} : { exposure: context.exposure }),
    ...(context.catalogInfo === undefined ? {} : { catalogInfo: context.catalogInfo }),
    served: context.served,
    ...(context.error === undefined ? {} : { error: context.error }),
  }),
});
