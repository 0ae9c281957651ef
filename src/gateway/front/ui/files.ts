import { readFileSync } from 'node:fs';

/** One file of the operator page: its content type and body. */
export interface UiFile {
  type: string;
  body: string;
}

const read = (name: string): string => readFileSync(new URL(`./${name}`, import.meta.url), 'utf8');

/**
 * The operator page's files (plain HTML, CSS and a script: no build step), read once when the front loads, by the
 * name under `/ui/`.
 */
export const UI_FILES: Readonly<Record<string, UiFile>> = {
  'index.html': { type: 'text/html; charset=utf-8', body: read('index.html') },
  'app.css': { type: 'text/css; charset=utf-8', body: read('app.css') },
  'app.js': { type: 'text/javascript; charset=utf-8', body: read('app.js') },
};
