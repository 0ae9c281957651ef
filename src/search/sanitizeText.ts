/**
 * Makes tool text safe to put back into a prompt: text from MCP servers and clients is written by strangers and
 * may try to pose as instructions. Removes control and invisible formatting characters, chat-template tokens
 * (`<|im_start|>`, `[INST]`, `<<SYS>>`), HTML/XML tags (`<system>`, `</tool>`), markdown headings and code fences,
 * collapses whitespace and bounds the length (cut at a character boundary, marked with '…').
 */

// C0/C1 controls except tab and newline (handled as whitespace), plus zero-width and bidi-override characters.
const CONTROL =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u00AD\u200B-\u200F\u202A-\u202E\u2060-\u2069\uFEFF]/gu;
const TEMPLATE_TOKEN = /<\|[^|<>]{0,64}\|>|\[\/?(?:INST|SYS)\]|<<\/?SYS>>/giu;
const TAG = /<\/?[A-Za-z!?][^<>]{0,400}>/gu;
const FENCE = /(?:```|~~~)[^\s`~]*/gu;
const HEADING = /^[ \t]*#{1,6}[ \t]+/gmu;
const QUOTE_MARKER = /^[ \t]*>[ \t]?/gmu;

export interface SanitizeOptions {
  /** Maximum length in characters, '…' included. */
  maxLength: number;
  /** Keep line breaks (collapsed to single ones) instead of folding everything onto one line. */
  keepNewlines?: boolean;
}

/** Sanitizes and bounds one piece of untrusted text. Pure: no I/O. */
export function sanitizeText(text: unknown, options: SanitizeOptions): string {
  if (typeof text !== 'string' || text === '') return '';
  let s = text.replace(/\r\n?/g, '\n').replace(CONTROL, '');
  // Repeat until stable so nested or split markup (`<sys<b>tem>`) cannot reassemble after one pass.
  for (let i = 0; i < 5; i++) {
    const before = s;
    s = s
      .replace(TEMPLATE_TOKEN, ' ')
      .replace(TAG, ' ')
      .replace(FENCE, ' ')
      .replace(HEADING, '')
      .replace(QUOTE_MARKER, '');
    if (s === before) break;
  }
  s = options.keepNewlines
    ? s
        .replace(/[ \t\f\v]+/g, ' ')
        .replace(/ ?\n[\s]*/g, '\n')
        .trim()
    : s.replace(/\s+/g, ' ').trim();
  return bound(s, options.maxLength);
}

/** Cuts to at most maxLength characters without splitting a surrogate pair, ending with '…' when cut. Pure. */
export function bound(s: string, maxLength: number): string {
  if (s.length <= maxLength) return s;
  if (maxLength <= 1) return '…'.slice(0, Math.max(0, maxLength));
  let end = maxLength - 1;
  const code = s.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1; // do not leave half a surrogate pair
  return s.slice(0, end).trimEnd() + '…';
}
