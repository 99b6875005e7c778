/**
 * The controller's release (`package.json` `version`; the image tags of infra/kustomization.yaml carry the
 * same). A constant rather than a read of package.json, so the bundles and the runner's single executable
 * carry it without the file; test/unit/version.test.ts keeps the three equal.
 */
export const CAPTF_VERSION = '0.1.0';
