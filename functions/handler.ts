import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * Adapters for function platforms (DESIGN.md section 15) that hand over one HTTP request at a time instead
 * of letting the code listen: a Node `(req, res)` handler (Google Cloud Functions, Azure with a Node
 * adapter, OpenFaaS node templates) and a fetch `Request → Response` handler (Cloudflare-style and
 * Knative Functions' fetch runtime). Both serve the same fastify app, so routes, auth, limits and status
 * codes are identical to the Knative Service.
 */

/** `(req, res)`: routes the raw request through the app's own router. */
export function nodeHandler(
  app: FastifyInstance,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const ready = app.ready();
  return async (req, res) => {
    await ready;
    app.routing(req, res);
  };
}

/** `Request → Response`: replays the request through `app.inject` (no socket), body size capped by the app. */
export function fetchHandler(app: FastifyInstance): (request: Request) => Promise<Response> {
  const ready = app.ready();
  return async (request) => {
    await ready;
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, key) => {
      headers[key] = value;
    });
    const body =
      request.method === 'GET' || request.method === 'HEAD'
        ? undefined
        : Buffer.from(await request.arrayBuffer());
    const response = await app.inject({
      method: request.method as 'GET' | 'POST',
      url: `${url.pathname}${url.search}`,
      headers,
      ...(body === undefined ? {} : { payload: body }),
    });
    const responseHeaders = new Headers();
    for (const [key, value] of Object.entries(response.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(key, String(one));
    }
    return new Response(response.statusCode === 204 ? null : response.rawPayload, {
      status: response.statusCode,
      headers: responseHeaders,
    });
  };
}
