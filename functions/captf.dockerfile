# The handlers' container image (Knative Service, serverless.yml `controller` function). Node 24 runs the
# TypeScript sources directly (type stripping), so the image carries no build output.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production PORT=8080
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts
COPY src ./src
COPY functions ./functions
USER 65532:65532
EXPOSE 8080
CMD ["node", "functions/main.ts"]
