/**
 * The routes of the command API, declared once: the handler dispatches on them, the stack
 * creates one API Gateway route per entry, and a test holds docs/openapi.json to them.
 */

/** A route: a method and a path template whose `{name}` segments are parameters. */
export interface Route {
  readonly method: 'GET' | 'POST';
  readonly path: string;
}

/** Every route of the API. */
export const routes = {
  postCommand: { method: 'POST', path: '/commands' },
  getOutcome: { method: 'GET', path: '/commands/{commandId}' },
  getAggregate: { method: 'GET', path: '/aggregates/{aggregateType}/{aggregateId}' },
  getRow: { method: 'GET', path: '/read-models/{projection}/{rowId}' },
} as const satisfies Record<string, Route>;

/** Name of a route. */
export type RouteName = keyof typeof routes;

/** A request path matched to a route template. */
export type PathMatch =
  | { readonly name: RouteName; readonly params: Readonly<Record<string, string>> }
  | { readonly allowed: readonly string[] }
  | { readonly badEncoding: string }
  | undefined;

const segments = (path: string): string[] => path.split('/').slice(1);

/** Matches `method` and `rawPath` (percent-encoded, as payload format 2.0 gives it) to a route. */
export const match = (method: string, rawPath: string): PathMatch => {
  const parts = segments(rawPath);
  const allowed: string[] = [];
  for (const [name, route] of Object.entries(routes) as [RouteName, Route][]) {
    const template = segments(route.path);
    if (template.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let fits = true;
    for (const [i, t] of template.entries()) {
      const part = parts[i] as string;
      if (t.startsWith('{')) {
        if (part === '') fits = false;
        else
          try {
            params[t.slice(1, -1)] = decodeURIComponent(part);
          } catch {
            return { badEncoding: part };
          }
      } else if (t !== part) fits = false;
    }
    if (!fits) continue;
    if (route.method === method) return { name, params };
    allowed.push(route.method);
  }
  return allowed.length > 0 ? { allowed } : undefined;
};
