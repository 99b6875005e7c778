/**
 * The contract between the Job the controller builds (src/core/job-manifest.ts) and the runner inside it
 * (src/runner): paths, file names and timings both sides must agree on (DESIGN.md sections 9 and 10,
 * docs/image-contract.md). Pure constants, so the core and the runner import the same values.
 */

/** The emptyDir the init container `runner` fills and the `source` container runs from. */
export const RUNNER_BIN_DIR = '/captf/bin';
/** File names inside RUNNER_BIN_DIR (`runner copy`): the runner itself, its loader, its libraries. */
export const RUNNER_FILE = 'runner';
export const LOADER_FILE = 'ld.so';
export const LIB_DIR = 'lib';

/** Where the per-run Secret is mounted, read-only (section 9). */
export const RUN_CONFIG_DIR = '/captf/config';
/** Scratch space of the runner: the module image may have no writable file system. */
export const RUNNER_WORK_DIR = '/captf/work';
/** What the module image provides (section 10, image contract). */
export const MODULE_DIR = '/captf/module';
export const RUNTIME_PATH = '/captf/runtime';
/**
 * Where the kubelet mounts the pod's service account token and the cluster CA (the ServiceAccount admission
 * plugin's `kube-api-access` volume): the runner reaches the state with them (src/runner/kube-proxy.ts).
 */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Where the runner writes its result document (`terminationMessagePolicy: File`). */
export const RESULT_FILE = '/dev/termination-log';

/**
 * The pod's `fsGroup`: the kubelet gives the per-run Secret's files this group (mode 0440) and adds it to
 * the supplementary groups of every container, so a module image with any non-root `USER` reads its run
 * config while other users of the node do not. 65532 is the conventional "nonroot" id of distroless images.
 */
export const RUN_CONFIG_FS_GROUP = 65_532;
/**
 * The user (and primary group) both containers of a Job pod run as: the Pod Security `restricted` standard
 * needs a non-root user, and naming one (rather than trusting the image's `USER`) lets a `FROM scratch`
 * module image with no `USER` run. It is the runner image's own `USER` (images/runner.dockerfile).
 */
export const JOB_RUN_AS_USER = 65_532;

/** Mode of the run-config files: owner and the fsGroup read; nobody writes. */
export const RUN_CONFIG_FILE_MODE = 0o440;

/** 600 s: Terraform finishes the in-flight provider call and writes state after SIGTERM (section 9). */
export const TERMINATION_GRACE_SECONDS = 600;
/** Section 10: the `interrupted` result is written before `grace − 30 s`. */
export const RESULT_DEADLINE_BEFORE_KILL_SECONDS = 30;
/** Room the runner keeps, after it kills the runtime, to write its result before that deadline. */
export const RESULT_WRITE_RESERVE_SECONDS = 30;
/**
 * How long the runner lets the runtime stop after forwarding SIGTERM as an interrupt before it kills it
 * (540 s): the result is then written by `grace − 30 s`, well before the kubelet's SIGKILL at `grace`.
 */
export const STOP_TIMEOUT_SECONDS =
  TERMINATION_GRACE_SECONDS - RESULT_DEADLINE_BEFORE_KILL_SECONDS - RESULT_WRITE_RESERVE_SECONDS;
