/**
 * Split an API error body (field name to messages) into the messages of the form's own
 * `fields`, shown under each, and the rest, shown at the top of the form: `detail` and
 * `non_field_errors` as they are, any other field named before its message.
 */
export function splitFieldErrors<F extends string>(
  fieldErrors: Record<string, string[]>,
  formFields: readonly F[],
): { fields: Partial<Record<F, string[]>>; general: string[] } {
  const fields: Partial<Record<F, string[]>> = {};
  const general: string[] = [];
  for (const [key, messages] of Object.entries(fieldErrors)) {
    if ((formFields as readonly string[]).includes(key)) fields[key as F] = messages;
    else if (key === 'detail' || key === 'non_field_errors') general.push(...messages);
    else general.push(...messages.map((m) => `${key}: ${m}`));
  }
  return { fields, general };
}
