import { Endpoint } from '../src';

async function main(): Promise<void> {
  const receiver = await Endpoint.create({ nodeId: 'receiver' });
  const sender = await Endpoint.create({ nodeId: 'sender' });

  const mailbox = receiver.openMailbox(0x10000n); // epoch ends when 11 bytes have landed
  mailbox.post(11);

  await sender.put('receiver', 0x10000n, Buffer.from('hello'), { offset: 0 });
  await sender.put('receiver', 0x10000n, Buffer.from(' world'), { offset: 5 });

  const done = await mailbox.next({ timeout: 1000 });
  console.log(`epoch ${done.epoch}: ${done.bytes} bytes, "${Buffer.from(done.buffer).toString()}"`);

  await sender.close();
  await receiver.close();
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
