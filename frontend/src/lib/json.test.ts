import { describe, expect, it } from 'vitest';
import { checkJsonObject, lineAndColumn, locateJsonError } from './json';

describe('checkJsonObject', () => {
  it('accepts a JSON object and returns the parsed value', () => {
    expect(checkJsonObject('{"sleep_seconds": 2, "tags": ["a"]}')).toEqual({
      ok: true,
      value: { sleep_seconds: 2, tags: ['a'] },
    });
  });

  it('treats blank text as an empty object', () => {
    expect(checkJsonObject('   \n')).toEqual({ ok: true, value: {} });
  });

  it.each([
    ['[1, 2]', 'an array'],
    ['null', 'null'],
    ['42', 'a number'],
    ['"text"', 'a string'],
    ['true', 'a boolean'],
  ])('rejects %s because it is not an object', (text, kind) => {
    const result = checkJsonObject(text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toBe(`Payload must be a JSON object, not ${kind}.`);
  });

  it('reports where a syntax error is', () => {
    const result = checkJsonObject('{\n  "a": 1,\n  "b": }');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error).toBe("Invalid JSON at line 3, column 8: unexpected '}'");
      expect(result.line).toBe(3);
      expect(result.column).toBe(8);
    }
  });

  it('rejects a payload over the byte limit, counting UTF-8 bytes', () => {
    const text = JSON.stringify({ s: 'é'.repeat(10) }); // 10 two-byte chars + 8 ASCII = 28 bytes, 18 chars
    expect(checkJsonObject(text, 28).ok).toBe(true);
    const result = checkJsonObject(text, 27);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toBe('Payload is 28 bytes; the limit is 27.');
  });
});

describe('locateJsonError', () => {
  it.each([
    ['{"a": 1}', null],
    ['{"a": [1, 2.5e3, -0, true, null, "x\\n\\u00e9"]}', null],
    ["{'a': 1}", { position: 1, message: "expected a property name in double quotes, found '''" }],
    ['{"a": 1,}', { position: 8, message: "expected a property name in double quotes, found '}'" }],
    ['{"a" 1}', { position: 5, message: "expected ':' after a property name, found '1'" }],
    ['{"a": 1', { position: 7, message: "expected ',' or '}', found end of input" }],
    ['{"a": "x', { position: 8, message: 'unterminated string' }],
    ['{"a": 01}', { position: 7, message: "expected ',' or '}', found '1'" }],
    ['{} {}', { position: 3, message: "unexpected '{' after the value" }],
    ['{"a": tru}', { position: 6, message: "unexpected 't'" }],
  ])('%s', (text, expected) => {
    expect(locateJsonError(text)).toEqual(expected);
    // It agrees with the engine on what is valid.
    expect(expected === null).toBe((() => { try { JSON.parse(text); return true; } catch { return false; } })());
  });
});

describe('lineAndColumn', () => {
  it('maps offsets to 1-based lines and columns', () => {
    expect(lineAndColumn('ab\ncd', 0)).toEqual({ line: 1, column: 1 });
    expect(lineAndColumn('ab\ncd', 4)).toEqual({ line: 2, column: 2 });
  });
});
