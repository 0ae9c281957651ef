#!/usr/bin/env node
// Thin launcher: runs the TypeScript CLI through tsx so `npx toolsearch` works after `npm ci`.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/run.ts');
