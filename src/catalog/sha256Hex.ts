import * as crypto from 'node:crypto';

type OneShot = (algorithm: string, data: string, encoding: 'hex') => string;
// `crypto.hash` (Node 20.12+) hashes a string in one call, several times cheaper than a Hash object for the small
// digests made every turn; older Node 20 releases get the same digest from a Hash object.
const oneShot = (crypto as unknown as { hash?: OneShot }).hash;

/** sha256 of a UTF-8 string, as lowercase hex. Pure: no I/O. */
export const sha256Hex: (text: string) => string =
  typeof oneShot === 'function'
    ? (text) => oneShot('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');
