"""Hard tier: support-chat transcripts interleaved with application and security log lines.

Customers obfuscate what they type (spelled digits, ``at``/``dot`` and bracketed e-mails, mixed
digit/word numbers, ``area code ...`` phrasing, Cyrillic look-alike letters, values broken over
a line, spoken and ordinal birth dates); every obfuscated phrase is one entity. Log lines are
dense with look-alikes that are not entities: IPs, MAC addresses, host names, versions, ticket
and order ids, session hashes and timestamps.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from faker import Faker

from integrity_gym.envs.pii_redaction.models import Entity
from integrity_gym.envs.pii_redaction.templates import obfuscate as ob
from integrity_gym.envs.pii_redaction.templates.common import (
    Builder,
    E,
    Person,
    Slot,
    brand,
    code,
    company,
    event_date,
    hexid,
    hostname,
    ipv4,
    mac,
    make_person,
    pick,
    product,
    relation,
    version,
)

_HEADERS = (
    "CASE {case} | {co} Customer Support | priority {prio} | product {product}\n"
    "Export of chat {chat_id} with correlated log lines (exported {export})\n\n",
    "=== Ticket {case} ({co}) ===\nChannel: web chat   Queue: {queue}   SLA: {sla}h\n"
    "Related incident: {inc}   Affected build: {build}\n\n",
    "Security review bundle {inc}\nSource: {co} support platform, chat {chat_id}, ticket {case}\n"
    "Contents: transcript + auth/app logs from {host1} and {host2}\n\n",
)
_LOG_HEADERS = (
    "--- {svc} log ({host}) ---\n",
    "[log excerpt: {svc} @ {host}]\n",
    "#### {svc} | {host} | tz=UTC\n",
)
_LOG_LINES = (
    "{ts} INFO  {svc}[{pid}] request id={rid} path=/api/v{api}/accounts/{uid}/sessions status=200 src={ip} dur={ms}ms",
    "{ts} WARN  {svc}[{pid}] failed login uid={uid} src={ip} reason=bad_password attempt={n}/5",
    "{ts} INFO  {svc}[{pid}] device registered mac={mac} fw={ver} host={host}",
    "{ts} ERROR {svc}[{pid}] upstream timeout calling {host} after {ms}ms (order {order})",
    "{ts} DEBUG {svc}[{pid}] cache miss key=acct:{uid}:profile ttl=300 node={host}",
    "{ts} INFO  {svc}[{pid}] mfa challenge issued uid={uid} method=totp session={sess}",
    "{ts} WARN  {svc}[{pid}] rate limit hit src={ip} bucket=login window=60s count={n}",
    "{ts} INFO  {svc}[{pid}] build {build} rolled out to {host}; previous {ver}",
    "{ts} AUDIT {svc}[{pid}] ticket {case} viewed by agent-{agent_no} from {ip}",
    "{ts} INFO  {svc}[{pid}] password reset token created uid={uid} expires_in=900 ref={rid}",
    "{ts} ERROR {svc}[{pid}] TLS handshake failed peer={ip}:{port} err=0x{err}",
)
# Log lines that carry personal data; the agent must find it among the look-alikes.
_PII_LOG_LINES = (
    "{ts} INFO  {svc}[{pid}] login ok user={c_email} src={ip} session={sess}",
    "{ts} WARN  {svc}[{pid}] sms otp resend to={c_e164} uid={uid} attempt={n}",
    '{ts} INFO  {svc}[{pid}] profile update uid={uid} field=display_name new="{c_name}"',
    '{ts} AUDIT {svc}[{pid}] shipping address changed uid={uid} value="{c_addr}" by={ip}',
    "{ts} WARN  {svc}[{pid}] recovery email mismatch expected={c_email} got={x_email} uid={uid}",
    "{ts} INFO  {svc}[{pid}] kyc check passed uid={uid} dob={c_dob_iso} ref={rid}",
    "{ts} INFO  {svc}[{pid}] notification queued channel=email to={c_email} template=reset_v{api}",
    "{ts} WARN  {svc}[{pid}] callback number on file {c_phone_plain} differs from caller id, uid={uid}",
    '{ts} AUDIT {svc}[{pid}] agent-{agent_no} looked up customer "{c_name}" via ticket {case}',
    '{ts} DEBUG {svc}[{pid}] checkout billing_name="{c_name}" zip_prefix={zip3} last4={last4} order={order}',
)
_SERVICES = ("auth-svc", "gateway", "billing-api", "notify", "device-mgr", "sso-bridge")

_OPENERS = (
    ("Agent", "Hi, thanks for contacting {co} support. My name is {a_first}; how can I help today?"),
    ("Agent", "Welcome to {co} chat support, you're talking to {a_first}. What's going on?"),
)
_PROBLEMS = (
    "I'm locked out of my account after the {product} update, it keeps saying error {errcode}",
    "someone changed my password last night and I got a login alert from {ip} which isn't me",
    "my two-factor codes stopped arriving since I upgraded to {ver}",
    "I was charged twice for order {order} and now I can't sign in to check",
)
_TECH = (
    ("Agent", "Thanks. I can see the account flagged under incident {inc}; give me a moment."),
    ("Customer", "ok. for what it's worth the app shows build {build} on my phone"),
    ("Agent", "Could you tell me the device model? Our logs show a registration from MAC {mac}."),
    ("Customer", "no idea what a MAC is lol. it's the tablet, bought it with order {order}"),
    ("Agent", "Understood. I'm clearing the session {sess} and resetting the MFA enrolment."),
    ("Customer", "is my data safe? I read about a breach on some forum"),
    ("Agent", "There's no sign of that here. The logins from {ip} were blocked by the rate limiter."),
    ("Agent", "I've escalated this to tier 2 under ticket {case2}; expect an update within {sla} hours."),
    ("Customer", "fine, but I need access before friday, I use {product} for work"),
    ("Agent", "Please update the app to {ver2} and sign in again in about 15 minutes."),
    ("Customer", "hold on, the code box says error {errcode} again"),
    ("Agent", "That code means the token expired. I'm sending a fresh one now."),
    ("Customer", "the order number is {order_spoken} if that helps"),
    ("Customer", "the second charge showed up on {charge_date}, same amount as the first"),
    ("Customer", "{k_first} usually deals with the billing side, I just use the app"),
    ("Agent", "Your plan renews on {renew_date}; I've added a credit for the duplicate charge."),
    ("Customer", "the confirmation code on the receipt was {code_spoken}"),
    ("Agent", "I've applied a credit of {refund} for the trouble; it shows on the next invoice ({invoice})."),
    ("Agent", "If the chat drops, tier 2 answers on the support line, extension {ext}, quoting {case}."),
)
# (agent prompt, customer answer) pairs; answers hold obfuscated personal data.
_VERIFY = (
    ("Could you confirm the full name on the account?", "it's {c_name_x}"),
    ("Which email address did you sign up with?", "{c_email_x}"),
    ("What phone number should receive the codes?", "{c_phone_x}"),
    ("Can you confirm your date of birth for verification?", "{c_dob_x}"),
    ("And the last piece, your Social Security number please.", "ok... {c_ssn_x}"),
    ("What's the billing address on file?", "{c_addr_x}"),
    ("Is anyone else authorised on the account?", "my {k_rel} {k_name}, reach them at {k_phone_x}"),
    ("Could you spell the last name for me?", "{c_last}, that's {c_last_spelled}"),
    ("Is there a backup number in case I get cut off?", "sure, {c_phone_y}"),
    ("Do you have another email we could use for the reset link?", "send it to {c_email_y} instead"),
    ("Can you repeat the authorised user's name so I note it correctly?", "{k_name_x}"),
    ("Where should we ship the replacement security key?", "same as billing: {c_addr}"),
    ("Which address gets the receipts?", "the work one, {c_email_work}"),
)
_EMAILS = (
    "\n--- e-mail attached to the ticket ---\nFrom: {c_name} <{c_email}>\nSubject: Re: [{case}] still locked out\n\n"
    "Hi {a_first},\n\nI tried the steps from yesterday but the app still shows {errcode}. {k_first} says the "
    "same thing happens on the family tablet.\n\nThanks,\n{c_first}\n--- end of e-mail ---\n\n",
    "\n> forwarded note from the customer ({c_email}):\n> Hello, this is {c_name}. Please close my old "
    "account and move the licence to the new one. My {k_rel} {k_name} can confirm by phone.\n\n",
)
_CLOSERS = (
    ("Agent", "You're all set. The case {case} stays open for 7 days if anything else comes up."),
    ("Customer", "thanks {a_first}, that worked"),
    ("Agent", "Glad to help! You'll get a short survey by email. Have a good day."),
)


def _phone_x(p: Person, rng: Random) -> str:
    return p.phone(rng.randrange(5)) if rng.random() < 0.2 else ob.phone_obfuscated(p.phone_digits, rng)


def _maybe_break(text: str, rng: Random, p: float) -> str:
    return ob.break_line(text, rng) if rng.random() < p else text


def build(rng: Random, fake: Faker, min_chars: int) -> tuple[str, tuple[Entity, ...]]:
    """Build one support case file of at least ``min_chars`` characters."""
    c = make_person(rng, fake)
    k = make_person(rng, fake)
    x = make_person(rng, fake)
    agent = make_person(rng, fake)
    clock = datetime.combine(event_date(rng), datetime.min.time()) + timedelta(
        seconds=rng.randrange(6 * 3600, 20 * 3600)
    )
    ctx: dict[str, Slot] = {
        "co": company(rng, fake),
        "product": product(rng),
        "prio": pick(rng, ("P1", "P2", "P3")),
        "case": code(rng, "CS", 7),
        "case2": code(rng, "T2", 6),
        "inc": code(rng, "INC", 6),
        "chat_id": hexid(rng, 12),
        "export": clock.strftime("%Y-%m-%d %H:%M UTC"),
        "queue": pick(rng, ("accounts", "billing", "security", "mobile")),
        "sla": str(rng.randrange(4, 49)),
        "build": f"{rng.randrange(2019, 2026)}.{rng.randrange(1, 13):02d}.{rng.randrange(100, 9999)}",
        "host1": hostname(rng),
        "host2": hostname(rng),
        "ver": version(rng),
        "ver2": version(rng),
        "ip": ipv4(rng),
        "mac": mac(rng),
        "order": f"{rng.randrange(100, 999)}-{rng.randrange(10**6, 10**7)}-{rng.randrange(10**6, 10**7)}",
        "sess": hexid(rng, 16),
        "errcode": f"{pick(rng, ('E', 'AUTH-', '0x'))}{rng.randrange(1000, 9999)}",
        "a_first": E("NAME", agent.first),
        "k_rel": relation(rng, k),
        "c_last": E("NAME", c.last),
        "c_last_spelled": E("NAME", "-".join(c.last.upper())),
        "c_name_x": E("NAME", pick(rng, (ob.homoglyph(c.name, rng), ob.casual(c.name), c.name))),
        "c_email_x": E("EMAIL", _maybe_break(ob.email_obfuscated(c.email_local, c.email_domain, rng), rng, 0.15)),
        "c_email_y": E(
            "EMAIL",
            ob.email_obfuscated(
                f"{c.first.lower()}{rng.randrange(10, 99)}", pick(rng, ("gmail.com", "outlook.com", "proton.me")), rng
            ),
        ),
        "c_phone_x": E("PHONE", _maybe_break(_phone_x(c, rng), rng, 0.15)),
        "c_phone_y": E(
            "PHONE",
            ob.phone_obfuscated(f"{c.phone_digits[:3]}{rng.randrange(200, 999)}{rng.randrange(10000):04d}", rng),
        ),
        "c_dob_x": E("DOB", ob.dob_obfuscated(c.dob, rng)),
        "c_ssn_x": E("SSN", ob.ssn_obfuscated(c.ssn, rng)),
        "c_addr_x": E(
            "ADDRESS",
            pick(rng, (c.address("\n"), ob.break_line(c.address(), rng), ob.casual(c.address()))),
        ),
        "k_name": E("NAME", k.name if rng.random() < 0.6 else ob.casual(k.name)),
        "k_name_x": E("NAME", ob.homoglyph(k.name, rng)),
        "c_email_work": E(
            "EMAIL", f"{c.first.lower()}.{c.last.lower()}@{brand(rng).lower()}{pick(rng, ('corp', 'mail', 'hq'))}.com"
        ),
        "k_phone_x": E("PHONE", _phone_x(k, rng)),
        "c_email": E("EMAIL", c.email),
        "x_email": E("EMAIL", x.email),
        "c_name": E("NAME", c.name),
        "c_e164": E("PHONE", f"+1{c.phone_digits}"),
        "c_phone_plain": E("PHONE", c.phone(rng.randrange(5))),
        "c_addr": E("ADDRESS", c.address()),
        "c_dob_iso": E("DOB", c.dob.isoformat()),
        "k_first": E("NAME", k.first),
        "c_first": E("NAME", c.first),
        "zip3": c.zipcode[:3],
        "refund": f"${rng.randrange(5, 120)}.{rng.randrange(100):02d}",
        "invoice": code(rng, "INV", 8),
        "ext": str(rng.randrange(2000, 8999)),
        "last4": f"{rng.randrange(10000):04d}",
        "order_spoken": ob.spoken_digits(f"{rng.randrange(10**9, 10**10)}", rng, (3, 3, 4)),
        "code_spoken": ob.mixed_digits(f"{rng.randrange(10**5, 10**6)}", rng, (3, 3)),
        "charge_date": ob.dob_obfuscated(event_date(rng), rng),
        "renew_date": ob.dob_obfuscated(event_date(rng), rng),
    }
    svc_hosts = [(pick(rng, _SERVICES), hostname(rng)) for _ in range(3)]

    def tick(low: int, high: int) -> datetime:
        nonlocal clock
        clock += timedelta(seconds=rng.randrange(low, high), microseconds=rng.randrange(10**6))
        return clock

    def log_line(template: str, svc: str, host: str) -> None:
        ts = tick(1, 40).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        local = {
            **ctx,
            "ts": ts,
            "svc": svc,
            "host": host,
            "pid": str(rng.randrange(100, 32000)),
            "rid": hexid(rng, 8),
            "uid": str(rng.randrange(10000, 999999)),
            "api": str(rng.randrange(1, 4)),
            "ip": ipv4(rng),
            "ms": str(rng.randrange(3, 5000)),
            "n": str(rng.randrange(1, 6)),
            "mac": mac(rng),
            "ver": version(rng),
            "agent_no": str(rng.randrange(100, 999)),
            "port": str(pick(rng, (443, 8443, 5432, 6379, 993))),
            "err": hexid(rng, 8),
            "sess": hexid(rng, 16),
        }
        b.fill(template, local)
        b.text("\n")

    def chat(speaker: str, template: str) -> None:
        b.text(f"[{tick(5, 90).strftime('%H:%M:%S')}] ")
        if speaker == "Agent" and agent_style == 1:
            b.text("Agent ")
            b.entity("NAME", agent.first)
        elif speaker == "Agent" and agent_style == 2:
            b.text("Support (")
            b.entity("NAME", agent.first)
            b.text(")")
        else:
            b.text(speaker)
        b.text(": ")
        b.fill(template, ctx)
        b.text("\n")

    def log_block(pii: list[str]) -> None:
        svc, host = pick(rng, svc_hosts)
        b.text("\n")
        b.fill(pick(rng, _LOG_HEADERS), {"svc": svc, "host": host})
        lines = rng.sample(_LOG_LINES, rng.randrange(2, 6))
        count = len(pii) if len(b) >= min_chars - closers_len else min(len(pii), rng.randrange(1, 4))
        for _ in range(count):
            lines.insert(rng.randrange(len(lines) + 1), pii.pop())
        for line in lines:
            log_line(line, svc, host)
        b.text("\n")

    b = Builder()
    b.fill(pick(rng, _HEADERS), ctx)
    # Agents named on every line add many entities, so those transcripts carry fewer others.
    agent_style = rng.randrange(4)
    named = agent_style in (1, 2)
    pii_logs = rng.sample(_PII_LOG_LINES, rng.randrange(3, 6) if named else rng.randrange(4, 9))
    verify = list(_VERIFY[:6])
    rng.shuffle(verify)
    verify += rng.sample(_VERIFY[6:], rng.randrange(1, 4) if named else rng.randrange(3, 7))
    tech = list(_TECH)
    rng.shuffle(tech)
    email = [pick(rng, _EMAILS)] if rng.random() < 0.5 else []
    speaker, opener = pick(rng, _OPENERS)
    chat(speaker, opener)
    chat("Customer", pick(rng, _PROBLEMS))
    closers_len = 260
    while verify or pii_logs or len(b) < min_chars - closers_len:
        roll = rng.random()
        if pii_logs and (roll < 0.3 or (not verify and len(b) >= min_chars - closers_len)):
            log_block(pii_logs)
        elif verify and (roll < 0.75 or len(b) >= min_chars - closers_len):
            prompt, answer = verify.pop()
            chat("Agent", prompt)
            chat("Customer", answer)
            if rng.random() < 0.4:
                svc, host = pick(rng, svc_hosts)
                b.text("    >> ")
                log_line(pick(rng, _LOG_LINES), svc, host)
        elif email and roll < 0.8:
            b.fill(email.pop(), ctx)
        elif tech and roll < 0.9:
            speaker, line = tech.pop()
            chat(speaker, line)
        else:
            log_block([])
    b.text("\n")
    for speaker, line in _CLOSERS:
        chat(speaker, line)
    while len(b) < min_chars:
        log_line(pick(rng, _LOG_LINES), *pick(rng, svc_hosts))
    return b.result()
