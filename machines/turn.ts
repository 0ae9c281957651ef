import { assign, setup } from 'xstate';
import type { Catalog } from '../src/catalog/index.js';
import type { ModeSchema } from '../src/events/index.js';
import type { Result, ToolSearchError } from '../src/shared/index.js';
import { describeError } from './describeError.js';
import { noCut, taskNotProvided, type TaskEvents, type TaskParams } from './tasks.js';

/**
 * The turn: one request of one session, from policy to the tools the model invoked.
 *
 *   resolvePolicy -> listSources -> index -> expose -> execute -> completed | failed
 *
 * Pure: every I/O step is a named task (`resolvePolicy`, `listSources`, `indexCatalog`, `expose`,
 * `executeStep`, see `tasks.ts`) that a state starts on entry with the `runTask` action and that answers with
 * `<task>.done` or `<task>.error`; the gateway provides `runTask` with `turnMachine.provide({ actions })`. The
 * placeholder answers `<task>.error` at once, so a turn started without its tasks ends in `failed` (fail closed).
 * Any task that fails fails the turn, with the stage and reason in `context.error`; expected failures of a step
 * (a blocked or failed call) are not failures but `Result` values, which go to whoever sent the step (the
 * machine only counts steps served).
 *
 * Steps come from outside as events: `STEP` queues a step (steps that arrive before `execute` wait in the
 * queue), the queue runs one step at a time in arrival order, `END` completes the turn once the queue is
 * drained, `ABORT` fails it at once, and leaving the state cuts the task in flight (`cutTask`). Time and ids come in
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

/** What each task of a turn answers with. */
export interface TurnTaskOutputs {
  resolvePolicy: unknown;
  listSources: Catalog;
  indexCatalog: CatalogInfo;
  expose: ExposureSummary;
  executeStep: Result<unknown>;
}
export type TurnTask = keyof TurnTaskOutputs;

export type TurnEvent =
  | { type: 'STEP'; stepId: string; tool: string; args: unknown }
  | { type: 'END' }
  | { type: 'ABORT'; reason: string }
  | TaskEvents<TurnTaskOutputs>;

/** What `runTask` gets in a turn: the task and its input (see the `*Input` types). */
export type TurnTaskParams = TaskParams<TurnActorBase> & { task: TurnTask };

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
 * Reads a value an earlier stage stored. The state order guarantees it is there; if it is not, the task's
 * input throws and the turn's actor errors: it never runs on without it.
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
  actions: {
    /** Starts a task; the gateway provides it. The placeholder fails the task at once (fail closed). */
    runTask: (args, params: TurnTaskParams) => taskNotProvided(args, params),
    /** Cuts the task of a state being left; the gateway provides it when its tasks have signals of their own. */
    cutTask: (_, _params: { task: TurnTask }) => noCut(),
    /** The exposure the turn's steps are served with. */
    recordExposure: assign(({ event }) => ({
      exposure: event.type === 'expose.done' ? event.output : undefined,
    })),
    /** The step running (the queue's first) was served. */
    recordServed: assign(({ context }) => ({ queue: context.queue.slice(1), served: context.served + 1 })),
    /** A state's task failed: the error names the stage. */
    recordFailure: assign(({ event }, params: { stage: TurnStage }) => ({
      error: failedAt(params.stage, 'error' in event ? event.error : undefined),
    })),
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
    /** Besides the step running (the queue's first), another one is queued. */
    hasNextStep: ({ context }) => context.queue.length > 1,
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
      // Each task's input is built field by field: a spread of `base(context)` here cost more than the task's step.
      entry: { type: 'runTask', params: ({ context }) => ({ task: 'resolvePolicy', input: base(context) }) },
      exit: { type: 'cutTask', params: { task: 'resolvePolicy' } },
      on: {
        ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'resolvePolicy' } } },
        'resolvePolicy.done': { target: 'listSources', actions: assign({ policy: ({ event }) => event.output }) },
        'resolvePolicy.error': {
          target: 'failed',
          actions: { type: 'recordFailure', params: { stage: 'resolvePolicy' } },
        },
      },
    },
    listSources: {
      entry: {
        type: 'runTask',
        params: ({ context }) => ({
          task: 'listSources',
          input: {
            sessionId: context.sessionId,
            turnId: context.turnId,
            turn: context.turn,
            policy: context.policy,
          } satisfies ListSourcesInput,
        }),
      },
      exit: { type: 'cutTask', params: { task: 'listSources' } },
      on: {
        ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'listSources' } } },
        'listSources.done': { target: 'index', actions: assign({ catalog: ({ event }) => event.output }) },
        'listSources.error': { target: 'failed', actions: { type: 'recordFailure', params: { stage: 'listSources' } } },
      },
    },
    index: {
      entry: {
        type: 'runTask',
        params: ({ context }) => ({
          task: 'indexCatalog',
          input: {
            sessionId: context.sessionId,
            turnId: context.turnId,
            turn: context.turn,
            policy: context.policy,
            catalog: required(context.catalog, 'catalog'),
          } satisfies IndexCatalogInput,
        }),
      },
      exit: { type: 'cutTask', params: { task: 'indexCatalog' } },
      on: {
        ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'index' } } },
        'indexCatalog.done': { target: 'expose', actions: assign({ catalogInfo: ({ event }) => event.output }) },
        'indexCatalog.error': { target: 'failed', actions: { type: 'recordFailure', params: { stage: 'index' } } },
      },
    },
    expose: {
      entry: {
        type: 'runTask',
        params: ({ context }) => ({
          task: 'expose',
          input: {
            sessionId: context.sessionId,
            turnId: context.turnId,
            turn: context.turn,
            policy: context.policy,
            catalog: required(context.catalog, 'catalog'),
            catalogInfo: required(context.catalogInfo, 'catalogInfo'),
          } satisfies ExposeInput,
        }),
      },
      exit: { type: 'cutTask', params: { task: 'expose' } },
      on: {
        ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'expose' } } },
        // Straight to where the turn goes on: a queued step starts, an END with nothing queued completes the turn.
        'expose.done': [
          { guard: 'hasQueuedStep', target: 'execute.running', actions: 'recordExposure' },
          { guard: 'isEnding', target: 'completed', actions: 'recordExposure' },
          { target: 'execute', actions: 'recordExposure' },
        ],
        'expose.error': { target: 'failed', actions: { type: 'recordFailure', params: { stage: 'expose' } } },
      },
    },
    execute: {
      on: { ABORT: { target: 'failed', actions: { type: 'recordAbort', params: { stage: 'execute' } } } },
      initial: 'waiting',
      states: {
        // Nothing queued, nothing running. Every way in and out is a direct transition (no eventless re-check after
        // each event, which would add a microstep and a snapshot per step): a step that arrives starts at once, an
        // END completes the turn.
        waiting: {
          on: {
            STEP: {
              guard: 'acceptsSteps',
              target: 'running',
              actions: assign({
                queue: ({ context, event }) => [
                  ...context.queue,
                  { stepId: event.stepId, tool: event.tool, args: event.args },
                ],
              }),
            },
            END: [
              { guard: 'hasQueuedStep', target: 'running', actions: assign({ ending: true }) },
              // Nothing is queued: the turn completes now, and a final state has no later step to refuse.
              { target: '#turn.completed' },
            ],
          },
        },
        running: {
          entry: {
            type: 'runTask',
            params: ({ context }) => ({
              task: 'executeStep',
              input: {
                sessionId: context.sessionId,
                turnId: context.turnId,
                turn: context.turn,
                policy: context.policy,
                catalog: required(context.catalog, 'catalog'),
                catalogInfo: required(context.catalogInfo, 'catalogInfo'),
                exposure: required(context.exposure, 'exposure'),
                step: required(context.queue[0], 'queued step'),
              } satisfies ExecuteStepInput,
            }),
          },
          exit: { type: 'cutTask', params: { task: 'executeStep' } },
          on: {
            // The step served leaves the queue; the next queued one starts at once (the state is entered again, its
            // task with it), else an END received meanwhile completes the turn, else the turn waits.
            'executeStep.done': [
              { guard: 'hasNextStep', target: 'running', reenter: true, actions: 'recordServed' },
              { guard: 'isEnding', target: '#turn.completed', actions: 'recordServed' },
              { target: 'waiting', actions: 'recordServed' },
            ],
            'executeStep.error': {
              target: '#turn.failed',
              actions: { type: 'recordFailure', params: { stage: 'execute' } },
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
