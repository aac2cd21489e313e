"""Hard tier: support-chat transcripts interleaved with application and security log lines.

Customers obfuscate what they type (spelled digits, ``at``/``dot`` and bracketed e-mails, mixed
digit/word numbers, ``area code ...`` phrasing, Cyrillic look-alike letters, values broken over
a line, spoken and ordinal birth dates); every obfuscated phrase is one entity. Log lines are
dense with look-alikes that are not entities: IPs, MAC addresses, host names, versions, ticket
and order ids, session hashes and timestamps.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from random import Random

from faker import Faker

from integrity_gym.envs.pii_redaction.models import Entity
from integrity_gym.envs.pii_redaction.templates import heldout as ho
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
    org_domain,
    org_phone,
    pick,
    product,
    relation,
    role_mailbox,
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
    "{ts} INFO  {svc}[{pid}] mail relay accepted from={noreply} rcpt=1 msg={rid}",
    "{ts} INFO  {svc}[{pid}] refund batch {batch} settled items={n} by=agent-{agent_no}",
    "{ts} WARN  {svc}[{pid}] ivr queue depth={ms} on support line {org_phone}, overflow to {org_phone2}",
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
# Held-out log lines: personal data URL-encoded in request lines or inside JSON bodies.
_PII_LOG_LINES_HELD_OUT = (
    "{ts} INFO  {svc}[{pid}] GET /api/v{api}/password-reset?email={c_email_url}&lang=en status=302 src={ip}",
    '{ts} INFO  {svc}[{pid}] POST /api/v{api}/profile body={"display_name": "{c_name}", "uid": {uid}} status=200',
    "{ts} WARN  {svc}[{pid}] sms gateway reject msisdn={c_msisdn_url} reason=carrier_block uid={uid}",
    "{ts} DEBUG {svc}[{pid}] GET /internal/search?q={c_name_url}&limit=5 status=200 src={ip}",
    '{ts} INFO  {svc}[{pid}] webhook payload={"event": "address.updated", "line1": "{c_street}"} uid={uid}',
    "{ts} INFO  {svc}[{pid}] GET /api/v{api}/verify?dob={c_dob_compact}&uid={uid} status=200",
)
_SERVICES = ("auth-svc", "gateway", "billing-api", "notify", "device-mgr", "sso-bridge")

_OPENERS = (
    ("Agent", "Hi, thanks for contacting {co} support. My name is {a_first}; how can I help today?"),
    ("Agent", "Welcome to {co} chat support, you're talking to {a_first}. What's going on?"),
)
# Held-out openers: the agent gives a name without the usual introduction.
_OPENERS_HELD_OUT = (
    ("Agent", "Hi, {a_first} here from the {co} support team - what can I do for you?"),
    ("Agent", "Good day! {a_first} with {co} accounts. Tell me what happened."),
)
# A virtual assistant's name is a product name, not personal data.
_BOT_OPENER = "[{time}] Bot: My name is {bot}, {co}'s virtual assistant. I'm connecting you to a person now.\n"
_BOTS = ("Ava", "Max", "Sophie", "Leo", "Ella", "Finn", "Iris", "Milo", "Nova", "Theo")
# Shared look-alikes: ids in the shape of phone numbers or SSNs, spoken ids, and the numbers and
# mailboxes of organisations. None of them is personal data.
_LOOK_ALIKES = (
    ("Customer", "the bank gave me dispute number {dispute}, does that help?"),
    ("Agent", "Your RMA is {rma}; print the label and ship the old security key back with it."),
    ("Agent", "I've added voucher {voucher} to the account for one free month."),
    ("Customer", "the number the bank read out for the dispute was {dispute_spoken}"),
    ("Agent", "For anything about your data you can also write to {privacy_box}, quoting {case}."),
    ("Agent", "If we get cut off, call us on {org_phone} and give the agent your case number."),
    ("Customer", "I already emailed {support_box} twice and got nothing back"),
    ("Agent", "The fraud team's direct line is {org_phone2}; they're open until 8 pm."),
    ("Customer", "the transaction id on my statement is {voucher2}"),
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
    ("Where should we ship the replacement security key?", "please send it to {c_addr_ship}"),
    ("Which address gets the receipts?", "the work one, {c_email_work}"),
)
_EMAILS = (
    "\n--- e-mail attached to the ticket ---\nFrom: {c_name} <{c_email}>\nSubject: Re: [{case}] still locked out\n\n"
    "{greet} {a_greet},\n\nI tried the steps from yesterday but the app still shows {errcode}. {k_first} says the "
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


def _work_email(p: Person, domain: str, rng: Random, held_out: bool) -> str:
    local = f"{p.first.lower()}.{p.last.lower()}"
    return ho.email_heldout(local, domain, rng) if held_out else f"{local}@{domain}"


def _split_phone(digits: str, rng: Random) -> tuple[str, str]:
    """A phone number typed as two messages: the first six digits, then the last four."""
    head = ob.spoken_digits(digits[:6], rng, (3, 3)) if rng.random() < 0.5 else f"{digits[:3]} {digits[3:6]}"
    tail = " ".join(ob.DIGITS[int(d)] for d in digits[6:]) if rng.random() < 0.5 else digits[6:]
    return head, tail


def _maybe_break(text: str, rng: Random, p: float) -> str:
    return ob.break_line(text, rng) if rng.random() < p else text


def _phone_shaped(rng: Random) -> str:
    b, c = rng.randrange(200, 999), rng.randrange(10000)
    a = rng.randrange(201, 989)
    return pick(rng, (f"{a}-{b}-{c:04d}", f"({a}) {b}-{c:04d}", f"{a}.{b}.{c:04d}"))


def _ssn_shaped(rng: Random) -> str:
    return f"{rng.randrange(100, 899)}-{rng.randrange(10, 99)}-{rng.randrange(1000, 9999)}"


def build(rng: Random, fake: Faker, min_chars: int, held_out: bool = False) -> tuple[str, tuple[Entity, ...]]:
    """Build one support case file of at least ``min_chars`` characters.

    ``held_out`` (documents of the eval partition) allows the forms of :mod:`.heldout` for the
    customer's answers, a phone number sent in two messages, agents named only by their display
    name, and openers that name the agent without the usual introduction.
    """
    c = make_person(rng, fake)
    k = make_person(rng, fake)
    x = make_person(rng, fake)
    agent = make_person(rng, fake)

    def novel(p: float) -> bool:
        return held_out and rng.random() < p

    holiday = novel(0.3)
    if holiday:
        born, holiday_text = ho.holiday_birthday(c.dob.year, rng)
        c = replace(c, dob=born)
    domain = org_domain(rng)
    casual_mail = novel(0.8)
    split_parts = _split_phone(c.phone_digits, rng)
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
        # Held out: the customer's e-mail greets the agent in lower case ('hey amy,').
        "greet": "hey" if casual_mail else "Hi",
        "a_greet": E("NAME", agent.first.lower() if casual_mail else agent.first),
        "k_rel": relation(rng, k),
        "c_last": E("NAME", c.last),
        "c_last_spelled": E("NAME", ho.phonetic_spelling(c.last) if novel(0.8) else "-".join(c.last.upper())),
        "c_name_x": E(
            "NAME",
            ob.casual(c.name) if novel(0.8) else pick(rng, (ob.homoglyph(c.name, rng), ob.casual(c.name), c.name)),
        ),
        "c_email_x": E(
            "EMAIL",
            ho.email_heldout(c.email_local, c.email_domain, rng)
            if novel(0.8)
            else _maybe_break(ob.email_obfuscated(c.email_local, c.email_domain, rng), rng, 0.15),
        ),
        "c_email_y": E(
            "EMAIL",
            (ho.email_heldout if novel(0.8) else ob.email_obfuscated)(
                f"{c.first.lower()}{rng.randrange(10, 99)}", pick(rng, ("gmail.com", "outlook.com", "proton.me")), rng
            ),
        ),
        "c_phone_x": E(
            "PHONE",
            ho.phone_heldout(c.phone_digits, rng) if novel(0.8) else _maybe_break(_phone_x(c, rng), rng, 0.15),
        ),
        "c_phone_y": E(
            "PHONE",
            (ho.phone_heldout if novel(0.8) else ob.phone_obfuscated)(
                f"{c.phone_digits[:3]}{rng.randrange(200, 999)}{rng.randrange(10000):04d}", rng
            ),
        ),
        "c_dob_x": E(
            "DOB",
            holiday_text if holiday else ho.dob_heldout(c.dob, rng) if novel(0.75) else ob.dob_obfuscated(c.dob, rng),
        ),
        "c_ssn_x": E("SSN", ho.ssn_heldout(c.ssn, rng) if novel(0.8) else ob.ssn_obfuscated(c.ssn, rng)),
        "c_addr_x": E(
            "ADDRESS",
            ho.address_heldout(c.street, c.unit, c.city, c.state, c.zipcode, rng, prose=True)
            if novel(0.8)
            else pick(rng, (c.address("\n"), ob.break_line(c.address(), rng), ob.casual(c.address()))),
        ),
        "k_name": E("NAME", ob.casual(k.name) if novel(0.8) or rng.random() < 0.4 else k.name),
        "k_name_x": E("NAME", ob.homoglyph(k.name, rng)),
        "c_email_work": E(
            "EMAIL",
            _work_email(c, f"{brand(rng).lower()}{pick(rng, ('corp', 'mail', 'hq'))}.com", rng, novel(0.8)),
        ),
        "c_addr_ship": E(
            "ADDRESS",
            ho.address_heldout(c.street, c.unit, c.city, c.state, c.zipcode, rng, prose=False)
            if novel(0.8)
            else c.address(),
        ),
        "k_phone_x": E("PHONE", ho.phone_heldout(k.phone_digits, rng) if novel(0.6) else _phone_x(k, rng)),
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
        "dispute": _phone_shaped(rng),
        "rma": _phone_shaped(rng),
        "voucher": _ssn_shaped(rng),
        "voucher2": _ssn_shaped(rng),
        "dispute_spoken": ob.spoken_digits(f"{rng.randrange(2 * 10**9, 10**10)}", rng, (3, 3, 4)),
        "privacy_box": role_mailbox(rng, domain, ("privacy", "dpo", "dataprotection")),
        "support_box": role_mailbox(rng, domain, ("support", "help", "billing", "accounts")),
        "noreply": role_mailbox(rng, domain, ("noreply", "no-reply", "alerts", "security")),
        "org_phone": org_phone(rng),
        "org_phone2": org_phone(rng),
        "bot": pick(rng, _BOTS),
        "c_email_url": E("EMAIL", f"{c.email_local}%40{c.email_domain}"),
        "c_msisdn_url": E("PHONE", f"%2B1{c.phone_digits}"),
        "c_name_url": E("NAME", f"{c.first}+{c.last}" if rng.random() < 0.5 else f"{c.first}%20{c.last}"),
        "c_street": E("ADDRESS", c.street_line()),
        "c_dob_compact": E("DOB", c.dob.strftime("%Y%m%d")),
        "c_phone_p1": E("PHONE", split_parts[0]),
        "c_phone_p2": E("PHONE", split_parts[1]),
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
            "batch": _ssn_shaped(rng),
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
        elif speaker == "Agent" and agent_style == 4:  # held out: the display name alone
            b.entity("NAME", agent.first)
            b.text(" (agent)")
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
    agent_style = 4 if novel(0.8) else rng.randrange(4)
    named = agent_style in (1, 2, 4)
    pii_logs = rng.sample(_PII_LOG_LINES, rng.randrange(3, 6) if named else rng.randrange(4, 9))
    if held_out:  # swap some log lines for held-out encodings
        swaps = rng.sample(_PII_LOG_LINES_HELD_OUT, min(len(pii_logs), rng.randrange(3, 6)))
        pii_logs = swaps + pii_logs[len(swaps) :]
        rng.shuffle(pii_logs)
    verify = list(_VERIFY[:6])
    rng.shuffle(verify)
    verify += rng.sample(_VERIFY[6:], rng.randrange(1, 4) if named else rng.randrange(3, 7))
    tech = list(_TECH)
    rng.shuffle(tech)
    email = [pick(rng, _EMAILS)] if rng.random() < 0.5 else []
    extras = rng.sample(_LOOK_ALIKES, rng.randrange(5, 9) if held_out else rng.randrange(4, 8))
    split_phone = novel(0.5)
    if rng.random() < 0.4:
        b.fill(_BOT_OPENER, {**ctx, "time": tick(1, 30).strftime("%H:%M:%S")})
    speaker, opener = pick(rng, _OPENERS_HELD_OUT if novel(0.9) else _OPENERS)
    chat(speaker, opener)
    chat("Customer", pick(rng, _PROBLEMS))
    closers_len = 260
    while verify or pii_logs or extras or len(b) < min_chars - closers_len:
        roll = rng.random()
        if pii_logs and (roll < 0.3 or (not verify and len(b) >= min_chars - closers_len)):
            log_block(pii_logs)
        elif extras and (roll < 0.4 or (not verify and not pii_logs)):
            chat(*extras.pop())
        elif verify and (roll < 0.75 or len(b) >= min_chars - closers_len):
            prompt, answer = verify.pop()
            chat("Agent", prompt)
            if split_phone and answer == "{c_phone_x}":
                # Sent in two messages: each part is its own PHONE entity.
                chat("Customer", "it's {c_phone_p1}")
                chat("Customer", "{c_phone_p2} sorry, hit enter too soon")
            else:
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
