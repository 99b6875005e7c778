/**
 * Image references as the kubelet parses them (the distribution/reference grammar), and the local node's
 * mapping from a reference to an image name in its image directories. Pure.
 */

/** A parsed image reference: `registry/repository[:tag][@digest]`, normalised like Docker's client. */
export interface ParsedImageReference {
  /** Registry host (with port), `docker.io` when the reference names none. */
  registry: string;
  /** Repository path below the registry, e.g. `library/busybox` or `runner`. */
  repository: string;
  /** Tag when given; the kubelet defaults a reference with neither tag nor digest to `latest`. */
  tag: string | undefined;
  /** `sha256:<hex>` when the reference pins a digest. */
  digest: string | undefined;
}

/** Parse outcome: a value, never a throw (STYLE.md habit 5). */
export type ImageReferenceParse =
  | { kind: 'parsed'; reference: ParsedImageReference }
  | { kind: 'invalid'; message: string };

const component = '[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*';
const domainLabel = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const domain = `${domainLabel}(?:\\.${domainLabel})*(?::[0-9]+)?`;
const referencePattern = new RegExp(
  `^(?:(${domain})/)?(${component}(?:/${component})*)(?::([\\w][\\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$`,
);
// Docker treats the first path element as a registry only when it looks like a host (distribution's
// splitDockerDomain): it has a dot or a port, or is `localhost`.
const looksLikeHost = (first: string): boolean =>
  first.includes('.') || first.includes(':') || first === 'localhost';
// distribution/reference NameTotalLengthMax.
const maxNameLength = 255;

/**
 * Parses `image` like the kubelet before a pull. An unparseable reference is what the kubelet reports as
 * `InvalidImageName` (it never tries to pull it).
 */
export function parseImageReference(image: string): ImageReferenceParse {
  const invalid = (): ImageReferenceParse => ({
    kind: 'invalid',
    message: `Failed to apply default image tag "${image}": couldn't parse image name "${image}": invalid reference format`,
  });
  const match = referencePattern.exec(image);
  if (!match) return invalid();
  const [, maybeDomain, path = '', tag, digest] = match;
  let registry = 'docker.io';
  let repository = path;
  if (maybeDomain !== undefined && looksLikeHost(maybeDomain)) registry = maybeDomain;
  else if (maybeDomain !== undefined) repository = `${maybeDomain}/${path}`;
  // A domain-shaped first element with uppercase letters is not a valid repository component.
  if (maybeDomain !== undefined && !looksLikeHost(maybeDomain) && /[A-Z]/.test(maybeDomain)) return invalid();
  if (`${registry}/${repository}`.length > maxNameLength) return invalid();
  if (registry === 'docker.io' && !repository.includes('/')) repository = `library/${repository}`;
  return { kind: 'parsed', reference: { registry, repository, tag, digest } };
}

/** Where a reference points for the local node. */
export type LocalImageTarget =
  | { kind: 'local'; name: string; digest: string | undefined }
  | { kind: 'foreign'; reason: 'other-registry' | 'nested-repository' };

/**
 * Maps a parsed reference to a local image name: `<registry>/<name>[:tag][@digest]` with `registry` the
 * node's local registry host (default `captf.local`) names the image directory `<name>`. Any tag matches
 * (the directory has one version); a digest must match the directory's content digest, checked by the
 * image store. Everything else is foreign, and a foreign image cannot be pulled.
 */
export function localImageTarget(reference: ParsedImageReference, localRegistry: string): LocalImageTarget {
  if (reference.registry !== localRegistry) return { kind: 'foreign', reason: 'other-registry' };
  if (reference.repository.includes('/')) return { kind: 'foreign', reason: 'nested-repository' };
  return { kind: 'local', name: reference.repository, digest: reference.digest };
}
