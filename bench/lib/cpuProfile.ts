/** What the profiling scripts under bench/ share to read a V8 CPU profile. */

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/** Where a frame's cost goes: its package for node_modules, else its file (its function when it has no file). */
export function placeOf(cf: Frame): string {
  if (cf.url.includes('node_modules/'))
    return cf.url
      .split('node_modules/')
      .pop()!
      .split('/')
      .slice(0, cf.url.includes('node_modules/@') ? 2 : 1)
      .join('/');
  return cf.url === '' ? cf.functionName : cf.url.split('/').slice(-2).join('/');
}

/** A frame's function with its place and line, as the reports list it. */
export function frameLabel(cf: Frame): string {
  return `${cf.functionName || '(anonymous)'}  ${placeOf(cf)}${cf.url === '' ? '' : `:${cf.lineNumber + 1}`}`;
}
