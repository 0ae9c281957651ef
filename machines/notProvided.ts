/**
 * The placeholder behind every I/O actor of a machine. A machine started without `machine.provide()` reaches
 * its first actor, this rejects, and the machine ends in `failed` (or `blocked`): it fails closed, never open.
 * A missing actor is a wiring bug, so this throws rather than returning a `Result`.
 */
export class ActorNotProvidedError extends Error {
  override name = 'ActorNotProvidedError';
  /** Dotted code, so machines can carry it into their `error` like any other failure. */
  readonly code = 'machine.actorNotProvided';
  constructor(
    readonly actor: string,
    how = `machine.provide({ actors: { ${actor}: ... } })`,
  ) {
    super(`actor "${actor}" not provided: use ${how}`);
  }
}

/** Builds the rejecting body of a placeholder actor named `actor`. Pure: no I/O. */
export const notProvided = (actor: string) => async (): Promise<never> => {
  throw new ActorNotProvidedError(actor);
};
