import { HTTP } from 'cloudevents';
import {
  ApiServerEventTypeSchema,
  CloudEventAttributesSchema,
  type EventSubject,
  formatIssues,
  parseEventData,
} from '../schemas/cloudevents.ts';
import type { ErrorCode } from './errors.ts';

/**
 * Reads one ApiServerSource CloudEvent from an HTTP request (binary or structured mode) with the
 * `cloudevents` SDK, then checks type and data with zod. Untrusted input: every failure is a value with a
 * registry code and a clear message, never a throw (STYLE.md habit 5).
 */
export type EventParse =
  | { ok: true; subject: EventSubject }
  | { ok: false; code: Extract<ErrorCode, 'invalid-event' | 'unsupported-event-type'>; message: string };

/** Parses headers plus the raw body text. */
export function parseCloudEvent(
  headers: Record<string, string | string[] | undefined>,
  body: string,
): EventParse {
  const sent = contextAttributes(headers, body);
  if (sent === undefined) {
    return {
      ok: false,
      code: 'invalid-event',
      message:
        'parse CloudEvent: no cloud event detected (expected ce-* headers or application/cloudevents+json)',
    };
  }
  const attributes = CloudEventAttributesSchema.safeParse(sent);
  if (!attributes.success) {
    return {
      ok: false,
      code: 'invalid-event',
      message: `parse CloudEvent: ${formatIssues(attributes.error, 'attributes')}`,
    };
  }
  let decoded: unknown;
  try {
    decoded = HTTP.toEvent({ headers, body });
  } catch (error) {
    return { ok: false, code: 'invalid-event', message: `parse CloudEvent: ${describeSdkError(error)}` };
  }
  if (Array.isArray(decoded)) {
    return { ok: false, code: 'invalid-event', message: 'parse CloudEvent: batched events are not accepted' };
  }
  const event = decoded as { type?: unknown; data?: unknown };
  const type = ApiServerEventTypeSchema.safeParse(event.type);
  if (!type.success) {
    return {
      ok: false,
      code: 'unsupported-event-type',
      message: 'parse CloudEvent: type must be dev.knative.apiserver.(ref|resource).(add|update|delete)',
    };
  }
  const data = decodeData(event.data);
  if (!data.ok) return { ok: false, code: 'invalid-event', message: `parse CloudEvent: ${data.message}` };
  const subject = parseEventData(type.data, data.value);
  if (!subject.ok)
    return { ok: false, code: 'invalid-event', message: `parse CloudEvent: ${subject.message}` };
  return { ok: true, subject: subject.subject };
}

/**
 * The context attributes as sent: from the body in structured mode (content type
 * `application/cloudevents+json`), else from the `ce-*` headers (binary mode). Batches fall through to the
 * SDK, which reports them. Undefined when the request carries no CloudEvent at all.
 */
function contextAttributes(
  headers: Record<string, string | string[] | undefined>,
  body: string,
): unknown | undefined {
  const contentType = String(headers['content-type'] ?? '').toLowerCase();
  if (contentType.startsWith('application/cloudevents-batch')) return batchPlaceholder;
  if (contentType.startsWith('application/cloudevents')) {
    const parsed = decodeText(body);
    return parsed.ok ? parsed.value : {};
  }
  const header = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  if (Object.keys(headers).every((name) => !name.toLowerCase().startsWith('ce-'))) return undefined;
  return {
    specversion: header('ce-specversion'),
    id: header('ce-id'),
    source: header('ce-source'),
    type: header('ce-type'),
  };
}

/** Lets a batch reach the SDK, which answers "batched events are not accepted" below. */
const batchPlaceholder = { specversion: '1.0', id: 'batch', source: 'batch', type: 'batch' };

/** The SDK parses JSON data only for JSON content types; anything else arrives as text and must be JSON. */
function decodeData(data: unknown): { ok: true; value: unknown } | { ok: false; message: string } {
  if (data === undefined || data === null || data === '') return { ok: false, message: 'data is missing' };
  if (Buffer.isBuffer(data) || data instanceof Uint8Array)
    return decodeText(Buffer.from(data).toString('utf8'));
  if (typeof data === 'string') return decodeText(data);
  return { ok: true, value: data };
}

function decodeText(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, message: 'data is not JSON' };
  }
}

/** The SDK's ValidationError lists its problems in `errors`; keep the message short and value-free. */
function describeSdkError(error: unknown): string {
  if (!(error instanceof Error)) return 'not a CloudEvent';
  const details = (error as Error & { errors?: unknown }).errors;
  const list = Array.isArray(details)
    ? details
        .map((d) =>
          typeof d === 'object' && d !== null && 'instancePath' in d && 'message' in d
            ? `${String(d.instancePath) || '/'} ${String(d.message)}`
            : String(d),
        )
        .join('; ')
    : '';
  return `${error.message}${list ? ` (${list})` : ''}`.slice(0, 300);
}
