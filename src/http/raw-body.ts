import type { FastifyInstance } from 'fastify';

/**
 * Makes a plugin read every body as raw text, whatever its content type, capped at `bodyLimitBytes`: the
 * CloudEvents SDK wants the raw body (binary mode data may be any media type) and zod checks the shape.
 */
export function acceptRawText(app: FastifyInstance, bodyLimitBytes: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: bodyLimitBytes }, (_request, body, done) => {
    done(null, body);
  });
}
