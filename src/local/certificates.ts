import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Certificates of the local run, issued with openssl (a setup prerequisite: Node's crypto cannot issue
 * certificates). P-256 keys: fast to make, and both Go and Node accept them.
 */

/** A certificate and its private key, as PEM files. */
export interface CertificateFiles {
  certPath: string;
  keyPath: string;
}

/** Extensions of a CA that signs certificates and nothing else. */
export const CA_EXTENSIONS = ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign'];

/** Extensions of a TLS server certificate for loopback (`127.0.0.1` and `localhost`). */
export const LOOPBACK_SERVER_EXTENSIONS = [
  'basicConstraints=critical,CA:FALSE',
  'keyUsage=critical,digitalSignature',
  'extendedKeyUsage=serverAuth',
  'subjectAltName=IP:127.0.0.1,DNS:localhost',
];

/**
 * Extensions of a loopback certificate that is a server's and a client's at once: a Redis node's, which it
 * presents on its Cluster bus and replication links too (redis-server asks the bus's peers for a
 * certificate whatever `tls-auth-clients` says).
 */
export const LOOPBACK_PEER_EXTENSIONS = LOOPBACK_SERVER_EXTENSIONS.map((extension) =>
  extension.startsWith('extendedKeyUsage=') ? 'extendedKeyUsage=serverAuth,clientAuth' : extension,
);

/**
 * Writes `<dir>/<name>.crt` and `<dir>/<name>.key` (mode 0600), valid ten years: self-signed, or signed by
 * `issuer` when given. Throws with openssl's stderr on failure.
 */
export function issueCertificate(options: {
  dir: string;
  name: string;
  subject: string;
  extensions: readonly string[];
  issuer?: CertificateFiles;
}): CertificateFiles {
  const certPath = join(options.dir, `${options.name}.crt`);
  const keyPath = join(options.dir, `${options.name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '3650',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-subj',
      options.subject,
      ...(options.issuer ? ['-CA', options.issuer.certPath, '-CAkey', options.issuer.keyPath] : []),
      ...options.extensions.flatMap((extension) => ['-addext', extension]),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  chmodSync(keyPath, 0o600);
  return { certPath, keyPath };
}
