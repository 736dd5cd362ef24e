import type { JsonObject, JsonValue } from '../api/types';

export type JsonCheck =
  | { ok: true; value: JsonObject }
  | { ok: false; error: string; line?: number; column?: number };

/** Line and column (1-based) of a character offset in `text`. */
export function lineAndColumn(text: string, position: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, position));
  const lines = before.split('\n');
  return { line: lines.length, column: (lines[lines.length - 1]?.length ?? 0) + 1 };
}

/**
 * Validate the text of the payload editor: it must be a JSON object (blank
 * means `{}`), and when `maxBytes` is given its UTF-8 size must fit.
 */
export function checkJsonObject(text: string, maxBytes?: number): JsonCheck {
  if (text.trim() === '') return { ok: true, value: {} };
  if (maxBytes !== undefined) {
    const size = new TextEncoder().encode(text).length;
    if (size > maxBytes) return { ok: false, error: `Payload is ${size} bytes; the limit is ${maxBytes}.` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const located = locateJsonError(text);
    if (located) {
      const { line, column } = lineAndColumn(text, located.position);
      return { ok: false, error: `Invalid JSON at line ${line}, column ${column}: ${located.message}`, line, column };
    }
    return { ok: false, error: `Invalid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
    return { ok: false, error: `Payload must be a JSON object, not ${kind}.` };
  }
  return { ok: true, value: parsed as JsonObject };
}

/** Pretty-print a JSON value with two-space indentation. */
export function formatJson(value: JsonValue | undefined): string {
  return JSON.stringify(value ?? null, null, 2);
}

/**
 * Find the first syntax error in `text` with a small recursive-descent scan.
 * JSON.parse's messages differ between engines and often omit the position,
 * so the editor uses this to point at the problem. Returns null if valid.
 */
export function locateJsonError(text: string): { position: number; message: string } | null {
  let i = 0;
  class Stop extends Error {
    constructor(
      readonly position: number,
      message: string,
    ) {
      super(message);
    }
  }
  const fail = (message: string, at = i): never => {
    throw new Stop(at, message);
  };
  const describe = (at: number) => (at >= text.length ? 'end of input' : `'${text[at]}'`);
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail(`unexpected ${describe(i)}`);
  };
  const string = () => {
    i++; // opening quote
    while (i < text.length) {
      const ch = text[i] as string;
      if (ch === '"') {
        i++;
        return;
      }
      if (ch === '\\') {
        const next = text[i + 1];
        if (next === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('bad \\u escape');
          i += 6;
        } else if (next !== undefined && '"\\/bfnrt'.includes(next)) i += 2;
        else fail('bad escape');
      } else if (ch < ' ') fail('control character in string');
      else i++;
    }
    fail('unterminated string');
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m || m[0] === '' || m[0] === '-') fail(`unexpected ${describe(i)}`);
    else i += m[0].length;
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`expected a property name in double quotes, found ${describe(i)}`);
        string();
        ws();
        if (text[i] !== ':') fail(`expected ':' after a property name, found ${describe(i)}`);
        i++;
        value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return;
        }
        fail(`expected ',' or '}', found ${describe(i)}`);
      }
    }
    if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return;
        }
        fail(`expected ',' or ']', found ${describe(i)}`);
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true');
    if (ch === 'f') return literal('false');
    if (ch === 'n') return literal('null');
    if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) return number();
    fail(`unexpected ${describe(i)}`);
  };
  try {
    value();
    ws();
    if (i < text.length) fail(`unexpected ${describe(i)} after the value`);
    return null;
  } catch (err) {
    if (err instanceof Stop) return { position: err.position, message: err.message };
    throw err;
  }
}
