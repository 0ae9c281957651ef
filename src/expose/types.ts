import type { ModeSchema } from '../events/index.js';
import type { JsonSchema } from '../catalog/index.js';

/** A tool definition in the OpenAI chat-completions shape, as the provider receives it. */
export interface ProviderTool {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

/** The three surfaces a model can be given: the events' mode (`ModeSchema`), one definition. */
export type ExposureMode = ModeSchema;

/** What the model sees for one turn, and how exposed names map back to catalog ids (direct mode). */
export interface Exposure {
  mode: ExposureMode;
  tools: ProviderTool[];
  /** Exposed name -> catalog id (direct mode only; empty for the compact surfaces). */
  nameToId: Map<string, string>;
  /** UTF-8 bytes of the serialized tool definitions. */
  bytes: number;
  /** How many tool schemas the model saw up front. */
  schemasUpFront: number;
  /** Why the mode differs from the one asked for (code fell back to tools, harness has native search). */
  reason?: string;
}
