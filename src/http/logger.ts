import { type DestinationStream, type Logger, pino } from 'pino';

/**
 * The pino JSON logger (DESIGN.md section 13): never Secret data. Bodies are never logged; these paths are
 * redacted in case a request, an error cause or a step outcome carries them anyway.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'data',
  '*.data',
  'stringData',
  '*.stringData',
  'variables',
  '*.variables',
];

/** Builds the logger; `destination` lets tests read lines back as objects (STYLE.md habit 9). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'captf' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
