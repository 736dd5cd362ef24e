import { useState } from 'react';

/** Lines shown before "Show all": the end of a traceback, where the exception is. */
const PREVIEW_LINES = 12;

/**
 * A Python traceback as code: its last lines at first (the raise and the exception),
 * the whole of it on demand, and a Copy button for the full text.
 */
export function Traceback({ text, label }: { text: string; label: string }) {
  const lines = text.replace(/\s+$/, '').split('\n');
  const long = lines.length > PREVIEW_LINES;
  const [expanded, setExpanded] = useState(false);
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  const shown = expanded || !long ? lines : lines.slice(-PREVIEW_LINES);

  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  }

  return (
    <div className="traceback">
      <div className="traceback__bar">
        {long && (
          <button
            type="button"
            className="button button--small button--ghost"
            aria-expanded={expanded}
            onClick={() => setExpanded(!expanded)}
          >
            {expanded ? 'Show the last lines' : `Show all ${lines.length} lines`}
          </button>
        )}
        <button type="button" className="button button--small button--ghost" onClick={() => void copy()}>
          Copy traceback
        </button>
        {copied && (
          <span className="muted" role="status">
            {copied === 'yes' ? 'Copied.' : 'Copy failed: select the text instead.'}
          </span>
        )}
      </div>
      <pre className="traceback__code" aria-label={label}>
        <code>
          {!expanded && long ? `… ${lines.length - PREVIEW_LINES} lines above\n` : ''}
          {shown.join('\n')}
        </code>
      </pre>
    </div>
  );
}
