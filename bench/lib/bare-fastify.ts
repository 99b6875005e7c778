// A baseline of bench/cold-start.bench.ts: the least a fastify handler process can be, one `POST /events`
// route and one `POST /reconcile/...` route that answer 200 without work. `PORT=<port> node bench/lib/bare-fastify.ts`.
import Fastify from 'fastify';

const app = Fastify();
app.post('/events', async () => ({ handled: true }));
app.post('/reconcile/:kind/:namespace/:name', async () => ({ outcome: { action: 'none' } }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
