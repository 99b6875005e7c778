import type { KubeApis } from './connection.ts';
import { toKubeError } from './errors.ts';

/**
 * The API server's verdict on a bearer token (authentication.k8s.io/v1 TokenReview), for the handlers'
 * auth (src/http/auth.ts, issue 16): Knative sources send an OIDC token of their own ServiceAccount, minted
 * for the sink's audience, and only the API server that issued it can say whether it is good.
 */

/** What a TokenReview answered. */
export interface TokenReviewAnswer {
  authenticated: boolean;
  /** The token's user, e.g. `system:serviceaccount:<namespace>:<name>`; absent when not authenticated. */
  username?: string;
  /** The asked audiences the token is valid for (`status.audiences`). */
  audiences: string[];
  /** The authenticator's reason for a refusal; it never contains the token. */
  error?: string;
}

/** Asks the API server about one token. */
export interface KubeTokenReviewer {
  /**
   * Reviews `token` for `audiences`. Throws a KubeError when the review itself fails (outage, throttling,
   * no `create` on tokenreviews): a refused token is an answer, not an error.
   */
  review(token: string, audiences: readonly string[]): Promise<TokenReviewAnswer>;
}

/** The TokenReview client over the adapter's shared connection. */
export class ApiTokenReviewer implements KubeTokenReviewer {
  readonly #apis: KubeApis;

  constructor(apis: KubeApis) {
    this.#apis = apis;
  }

  async review(token: string, audiences: readonly string[]): Promise<TokenReviewAnswer> {
    try {
      const review = await this.#apis.authentication.createTokenReview({
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, audiences: [...audiences] },
        },
      });
      const status = review.status;
      const username = status?.user?.username;
      return {
        authenticated: status?.authenticated === true,
        ...(username ? { username } : {}),
        audiences: status?.audiences ?? [],
        ...(status?.error ? { error: status.error } : {}),
      };
    } catch (error) {
      throw toKubeError(error, 'create TokenReview');
    }
  }
}
