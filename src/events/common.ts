import { Type, type Static } from '@sinclair/typebox';

/** Where a tool comes from (the id's first segment). Mirrors `SourceKind` of src/catalog. */
export const SourceKindSchema = Type.Union([Type.Literal('openclaw'), Type.Literal('mcp'), Type.Literal('client')]);
export type SourceKindSchema = Static<typeof SourceKindSchema>;

/** Where a call's result comes from. Mirrors `ResultOrigin` of src/catalog. */
export const ResultOriginSchema = Type.Union([
  Type.Literal('gateway'),
  Type.Literal('plugin'),
  Type.Literal('mcp'),
  Type.Literal('client'),
]);
export type ResultOriginSchema = Static<typeof ResultOriginSchema>;

/** The three exposures: every schema (`direct`), the structured trio (`tools`), or `tool_search_code` (`code`). */
export const ModeSchema = Type.Union([Type.Literal('direct'), Type.Literal('tools'), Type.Literal('code')], {
  'x-expected': '"direct", "tools" or "code"',
});
export type ModeSchema = Static<typeof ModeSchema>;

/** `pi` (the embedded harness: Tool Search applies) or `codex` (native tool search: its tools are exposed directly). */
export const HarnessSchema = Type.Union([Type.Literal('pi'), Type.Literal('codex')], {
  'x-expected':
    '"pi" (the embedded harness, Tool Search applies) or "codex" (native tool search, tools exposed directly)',
});
export type HarnessSchema = Static<typeof HarnessSchema>;

/** An expected failure carried inside an event: dotted code and a message a user can act on. */
export const ErrorInfo = Type.Object({ code: Type.String(), message: Type.String() });
export type ErrorInfo = Static<typeof ErrorInfo>;

/** Tool counts per source kind. */
export const BySource = Type.Object({
  openclaw: Type.Integer({ minimum: 0 }),
  mcp: Type.Integer({ minimum: 0 }),
  client: Type.Integer({ minimum: 0 }),
});
export type BySource = Static<typeof BySource>;

/** How a search/describe was invoked: the structured tool (`tool_search`...) or a code run's bridge. */
export const ViaSchema = Type.Union([Type.Literal('tool'), Type.Literal('code')]);
export type ViaSchema = Static<typeof ViaSchema>;

export const NonNegInt = (description?: string) =>
  Type.Integer(description === undefined ? { minimum: 0 } : { minimum: 0, description });
