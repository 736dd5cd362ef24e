/**
 * Time formatting used across the dashboard. Pure functions: `now` is always passed in.
 *
 * The dashboard's one time-zone rule: times are shown in the browser's zone, and every
 * time a person reads says which zone that is. A clock time shown as text carries the
 * zone's short name (`14:05:09 CET`, `formatTimeOfDay` + `zoneName`); a relative time
 * ("3m ago") carries the exact time with its UTC offset in its tooltip and accessible
 * name (`formatExact`). The API's own timestamps (TIME_ZONE offset) are parsed as
 * instants, so the API's zone never leaks into what is shown.
 */

import type { JsonValue } from '../api/types';

/** "45s", "3m 05s", "2h 07m", "3d 4h". Negative durations are formatted by magnitude. */
export function formatDuration(ms: number): string {
  const total = Math.floor(Math.abs(ms) / 1000);
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (days > 0) return `${days}d ${hours}h`;
  if (hours > 0) return `${hours}h ${String(minutes).padStart(2, '0')}m`;
  if (minutes > 0) return `${minutes}m ${String(seconds).padStart(2, '0')}s`;
  return `${seconds}s`;
}

/** "just now", "12s ago", "in 3m", "2h ago", "4d ago" (coarse, one unit). */
export function formatRelative(iso: string, now: number): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const diff = then - now;
  const abs = Math.abs(diff);
  if (abs < 1500) return 'just now';
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'm'],
    [1000, 's'],
  ];
  const [size, unit] = units.find(([s]) => abs >= s) ?? [1000, 's'];
  const amount = Math.floor(abs / size);
  return diff < 0 ? `${amount}${unit} ago` : `in ${amount}${unit}`;
}

/** Full local date and time with seconds and the UTC offset, for tooltips. */
export function formatExact(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const offsetMin = -date.getTimezoneOffset();
  const sign = offsetMin >= 0 ? '+' : '-';
  const off = `${sign}${pad(Math.floor(Math.abs(offsetMin) / 60))}:${pad(Math.abs(offsetMin) % 60)}`;
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)} ${off}`
  );
}

/**
 * The browser zone's short name at `iso` ("CET", "UTC", "GMT+3:30": whatever the
 * browser's locale calls it), so a clock time can say which clock it is.
 */
export function zoneName(iso?: string): string {
  const date = iso === undefined ? new Date() : new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const part = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' })
    .formatToParts(date)
    .find((p) => p.type === 'timeZoneName');
  return part?.value ?? '';
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

/** Whether `text` is an ISO 8601 date-time with its offset (as the API writes times). */
export function isIsoTime(text: string): boolean {
  return ISO_TIME.test(text);
}

/** Every ISO date-time string in `value`, at any depth, as `formatExact` shows it. */
export function localizeTimes(value: JsonValue): JsonValue {
  if (typeof value === 'string') return isIsoTime(value) ? formatExact(value) : value;
  if (Array.isArray(value)) return value.map(localizeTimes);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, localizeTimes(v as JsonValue)]));
  }
  return value;
}

/** "14:05:09 CET": the local clock time and the zone it is in. */
export function formatTimeWithZone(iso: string): string {
  const time = formatTimeOfDay(iso);
  const zone = zoneName(iso);
  return zone ? `${time} ${zone}` : time;
}

/** "14:05" in local time, for chart axes (the chart names the zone once). */
export function formatClock(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return `${String(date.getHours()).padStart(2, '0')}:${String(date.getMinutes()).padStart(2, '0')}`;
}

/** "14:05:09" in local time, for a moment on the current page. */
export function formatTimeOfDay(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** Value for an <input type="datetime-local"> from a Date (local time, minutes precision). */
export function toDateTimeLocal(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
