import type { Result } from '../../shared/index.js';

/** Who owns a session, as the ownership record says once `acquire` settled it. */
export type SessionOwner =
  /**
   * This member owns it. `takeover`: it took the session from a member that stopped renewing its lease or handed it
   * over, so the session's turns must be adopted from the stream before its next command runs.
   */
  | { mine: true; takeover: boolean; principal: string }
  /** Another live member owns it: forward the command there. */
  | { mine: false; member: string; principal: string };

/** A command handed from the member that received it to the member that owns its session. */
export interface ForwardedCommand {
  /** The subject the command arrived on (its principal token is the identity it runs as). */
  subject: string;
  /** The command's envelope as received. */
  event: unknown;
  /**
   * The sender's unsettled deliveries of it (`DeliveryHandle.token`): the owner keeps them alive and settles them once
   * it has answered, so a command is not lost when the owner dies after taking it (it is delivered again).
   */
  deliveries?: string[];
  /** The work queue delivered it before (a member took it and died, or gave it back). */
  redelivered?: boolean;
}

/** One member of the gateway role, as the ownership records show it. */
export interface OwnershipMember {
  id: string;
  /** This member. */
  self: boolean;
  /** Its lease is renewed (false: expired or handed over; its sessions are being taken over). */
  live: boolean;
  /** Sessions it owns. */
  sessions: number;
  /** Milliseconds since its lease was last renewed, as seen here. */
  renewedAgoMs: number;
  startedAt: string;
}

export interface OwnershipStatus {
  memberId: string;
  /** The bound within which a member that stops renewing loses its sessions to another member. */
  takeoverMs: number;
  members: OwnershipMember[];
  /** Sessions whose owner is gone and that no member has claimed yet. */
  orphaned: number;
  /** Sessions this member took over so far. */
  takeovers: number;
}

/**
 * One owner per session among the members of the gateway role: an ownership record per session (revision-checked
 * claims) and a lease per member, renewed while it lives. The session command consumer asks it who owns a session
 * before it runs a command, forwards commands that belong to another member, and adopts the sessions it takes over.
 * The NATS implementation is `openSessionOwners` (src/bus/nats); the embedded bus has one process and needs none.
 */
export interface SessionOwnership {
  readonly memberId: string;
  /**
   * The owner of a session: claims it for this member when it has no owner yet (recording `principal`, the token
   * that opened it) or when its owner's lease expired or was handed over (a revision-checked update, so exactly one
   * member wins). Throws only for broken infrastructure.
   */
  acquire(sessionId: string, principal: string): Promise<SessionOwner>;
  /**
   * Hands a command to the member that owns its session. Failure `owner.notOwner` (it no longer owns it: ask
   * `acquire` again) or `owner.unreachable` (no answer in time: wait for its lease to expire).
   */
  forward(member: string, command: ForwardedCommand, timeoutMs: number): Promise<Result<void>>;
  /** Receives the commands other members forward here; `handler` says whether this member took it. */
  serve(handler: (command: ForwardedCommand) => Result<void>): () => void;
  /** True when this member's records say it owns the session (no round trip). */
  owns(sessionId: string): boolean;
  /**
   * True when a command forwarded here for the session may be taken: this member owns it, or it has no owner record
   * yet (this member will claim it). False while this member hands its sessions over.
   */
  takes(sessionId: string): boolean;
  /** Resolves when the session's record changes or after `ms`, whichever comes first. */
  changed(sessionId: string, ms: number): Promise<void>;
  /** Called when this member took a session over on its own (its owner stopped renewing or handed it over). */
  onTakeover(listener: (sessionId: string, from: string) => void): void;
  /** Called when another member took over a session this member had (this member's lease lapsed). */
  onLost(listener: (sessionId: string, to: string) => void): void;
  /** The session closed: its record goes, if this member owns it. */
  forget(sessionId: string): Promise<void>;
  /** Sessions this member owns. */
  owned(): string[];
  /**
   * Hands sessions over (shutdown): each record is marked released by this member, so another live member takes it
   * over at once and adopts it. Sessions that could not be marked stay this member's until its lease expires.
   */
  release(sessionIds: readonly string[]): Promise<void>;
  status(): OwnershipStatus;
  /** Stops renewing; `handover: true` also withdraws the member's lease at once (after `release`). */
  close(opts?: { handover?: boolean }): Promise<void>;
}
