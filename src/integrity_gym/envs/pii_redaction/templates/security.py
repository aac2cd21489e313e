"""Hard tier: support-chat transcripts interleaved with application and security log lines.

Customers obfuscate what they type (spelled digits, ``at``/``dot`` and bracketed e-mails, mixed
digit/word numbers, ``area code ...`` phrasing, Cyrillic look-alike letters, values broken over
a line, spoken and ordinal birth dates); every obfuscated phrase is one entity. Log lines are
dense with look-alikes that are not entities: IPs, MAC addresses, host names, versions, ticket
and order ids, session hashes and timestamps. Every chat line, speaker tag, e-mail and log line
that holds personal data comes in two disjoint sets of phrasings (:class:`~.common.Frames`), and
eval documents write their logs in another layout: training documents use the first set, eval
documents the second.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from random import Random

from faker import Faker

from integrity_gym.envs.pii_redaction.models import Entity
from integrity_gym.envs.pii_redaction.templates import heldout as ho
from integrity_gym.envs.pii_redaction.templates import obfuscate as ob
from integrity_gym.envs.pii_redaction.templates.common import (
    LEXICON,
    Builder,
    E,
    Frames,
    Person,
    Slot,
    brand,
    code,
    company,
    event_date,
    fictional_surname,
    hexid,
    hostname,
    ipv4,
    mac,
    make_person,
    org_domain,
    org_phone,
    pick,
    preamble,
    product,
    relation,
    role_mailbox,
    system_name,
    vary,
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
# Log lines that carry personal data; the agent must find it among the look-alikes. Eval documents
# write their logs in another layout ("{ts} [svc:pid] level: message", see _relayout) and word
# these lines differently.
_PII_LOG_LINES = Frames(
    train=(
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
    ),
    eval=(
        "{ts} [{svc}:{pid}] «info|notice»: «session opened|login ok|signed in|auth ok|session start» «@kv»{uid} "
        "«@kv»{c_email} «@kv»{ip} «@kv»{sess}",
        "{ts} [{svc}:{pid}] «warn|notice»: «one-time code sent|sms code queued|otp resend|text code sent» «@kv»{rid} "
        "«@kv»{c_e164} «@kv»{uid} try {n}",
        "{ts} [{svc}:{pid}] «info|audit»: «display name changed|profile renamed|name updated» «@kv»{uid} "
        "«@kv»'{c_name}'",
        "{ts} [{svc}:{pid}] «audit|info»: «delivery address set|address changed|shipping updated» «@kv»{uid} "
        "«@kv»'{c_addr}' «@kv»{ip}",
        "{ts} [{svc}:{pid}] «warn|error»: «backup address mismatch|recovery check failed|alt mail mismatch» «@kv»{uid} "
        "«@kv»{c_email} «@kv»{rid} «@kv»{x_email}",
        "{ts} [{svc}:{pid}] «info|audit»: «identity verified|kyc passed|id check ok» «@kv»{uid} «@kv»{c_dob_iso} "
        "«@kv»{rid}",
        "{ts} [{svc}:{pid}] «info|debug»: «reset mail queued|notification queued|mail queued» «@kv»{rid} "
        "«@kv»{c_email}",
        "{ts} [{svc}:{pid}] «warn|notice»: «caller id mismatch|callback differs|number mismatch» «@kv»{rid} "
        "«@kv»{c_phone_plain} «@kv»{uid}",
        "{ts} [{svc}:{pid}] «audit|info»: agent-{agent_no} «opened profile|viewed record|looked up» «@kv»{uid} "
        "«@kv»'{c_name}' «@kv»{case}",
        "{ts} [{svc}:{pid}] «debug|info»: «payment attempt|checkout|card auth» «@kv»{rid} «@kv»'{c_name}' «@kv»{zip3} "
        "«@kv»{last4} «@kv»{order}",
    ),
)
# Held-out log lines (eval only, in the eval layout): personal data URL-encoded in request lines
# or inside JSON bodies.
_PII_LOG_LINES_HELD_OUT = (
    "{ts} [{svc}:{pid}] info: GET "
    "/api/v{api}/«password-reset|reset|recover|pw-reset»?«@jk»=«@flag»&«email|e|mail|user|login|u»="
    "{c_email_url}&«@jk»={uid} status=302 «@kv»{ip}",
    '{ts} [{svc}:{pid}] info: POST /api/v{api}/profile body={"«@jk»": {uid}, "«@jk»": '
    '"{c_name}", "«@jk»": "{rid}"} status=200',
    "{ts} [{svc}:{pid}] warn: sms gateway reject «@kv»{uid} «@kv»«@flag» "
    "«msisdn|to|number|dest|phone|tel»={c_msisdn_url} "
    "«@kv»{rid} reason=carrier_block",
    "{ts} [{svc}:{pid}] debug: GET /internal/search?«@jk»=«@flag»&«q|query|term|s|find»={c_name_url}&«@jk»={uid} "
    "status=200 «@kv»{ip}",
    '{ts} [{svc}:{pid}] info: webhook payload={"event": "address.updated", "«@jk»": {uid}, '
    '"«@jk»": "{c_street}", "«@jk»": "{rid}"}',
    "{ts} [{svc}:{pid}] info: GET /api/v{api}/verify?«@jk»=«@flag»&«dob|birth|bd|d»={c_dob_compact}&«@jk»={uid} "
    "status=200",
)
#: Eval-only log lines without personal data whose generic fields carry ids, hosts, organisations'
#: mailboxes and numbers: a field name says nothing of the value's kind.
_DECOY_LOG_LINES = (
    "{ts} [{svc}:{pid}] «info|debug»: «lookup|check|fetch|resolve|scan» «@kv»{uid} «@kv»{host}",
    "{ts} [{svc}:{pid}] «info|notice»: «session probe|health check|ping» «@kv»{rid} «@kv»{ip} «@kv»{sess}",
    "{ts} [{svc}:{pid}] «info|debug»: «device seen|device sync|device ping» «@kv»{uid} «@kv»{mac} «@kv»{ver}",
    "{ts} [{svc}:{pid}] «info|audit»: «order viewed|order sync|refund check» «@kv»{rid} «@kv»{order} "
    "«@kv»agent-{agent_no}",
    "{ts} [{svc}:{pid}] «info|notice»: «mail relay|outbound mail|relay ok» «@kv»{uid} «@kv»{noreply} «@kv»{rid}",
    "{ts} [{svc}:{pid}] «warn|info»: «ivr route|line busy|call queued» «@kv»{rid} «@kv»{org_phone} «@kv»{org_phone2}",
    "{ts} [{svc}:{pid}] «debug|info»: «license check|plan check|entitlement» «@kv»{uid} «@kv»'{product}' «@kv»'{co}'",
    "{ts} [{svc}:{pid}] «info|audit»: «ticket touched|case viewed|case sync» «@kv»{rid} «@kv»{case} «@kv»'{site} desk'",
    "{ts} [{svc}:{pid}] «debug|info»: «batch settled|refund batch|payout» «@kv»{uid} «@kv»{batch} «@kv»{rid}",
    "{ts} [{svc}:{pid}] «info|debug»: «token issued|token refresh|grant ok» «@kv»{rid} «@kv»{svc} «@kv»{host}",
    '{ts} [{svc}:{pid}] info: POST /api/v{api}/«sync|event|update» body={"«@jk»": {uid}, "«@jk»": "{product}", '
    '"«@jk»": "{rid}"} '
    "status=200",
    '{ts} [{svc}:{pid}] info: webhook payload={"event": "«plan|case|device».updated", "«@jk»": {uid}, "«@jk»": '
    '"{co}", "«@jk»": "{rid}"}',
)
_LOG_LAYOUT = re.compile(r"^\{ts\} (?P<level>[A-Z]+) +\{svc\}\[\{pid\}\] (?P<body>.*)$", re.DOTALL)


def _relayout(template: str) -> str:
    """A training log line in the eval layout: '{ts} [{svc}:{pid}] level: message'."""
    found = _LOG_LAYOUT.match(template)
    if found is None:
        raise ValueError(f"log template {template!r} is not in the training layout")
    return f"{{ts}} [{{svc}}:{{pid}}] {found['level'].lower()}: {found['body']}"


#: The look-alike log lines (no personal data), in each partition's layout.
_LOG_LINES_BY_PARTITION = Frames(train=_LOG_LINES, eval=tuple(_relayout(t) for t in _LOG_LINES))
_SERVICES = ("auth-svc", "gateway", "billing-api", "notify", "device-mgr", "sso-bridge")

_OPENERS = Frames(
    train=(
        ("Agent", "Hi, thanks for contacting {co} support. My name is {a_first}; how can I help today?"),
        ("Agent", "Welcome to {co} chat support, you're talking to {a_first}. What's going on?"),
    ),
    # Eval openers name the agent without the usual introduction.
    eval=(
        (
            "Agent",
            "«Hi|Hello|Good day|Hey there|Welcome», «you're chatting with|this is|you've reached» the {site} "
            "desk of {co}; «@as_» {a_first}«@after» What can I do for you?",
        ),
        (
            "Agent",
            "«Hi|Hello|Good day|Hey there|Welcome»! {co} accounts, {site} «team|desk|office», «@as_» "
            "{a_first}«@after» Tell me what happened.",
        ),
        (
            "Agent",
            "«Thanks for waiting|Sorry for the wait|Thanks for holding» - {co} help desk, {site} «team|desk|"
            "office»; «@as_» {a_first}«@after» What seems to be the problem?",
        ),
    ),
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
    ("Agent", "Your plan renews on {renew_date}; I've added a credit for the duplicate charge."),
    ("Customer", "the confirmation code on the receipt was {code_spoken}"),
    ("Agent", "I've applied a credit of {refund} for the trouble; it shows on the next invoice ({invoice})."),
    ("Agent", "If the chat drops, tier 2 answers on the support line, extension {ext}, quoting {case}."),
)
# The technical line that names someone.
_TECH_PII = Frames(
    train=(("Customer", "{k_first} usually deals with the billing side, I just use the app"),),
    eval=(("Customer", "«@chat»{k_first}«@cafter», does the billing stuff, I only log in to the app"),),
)
# (agent prompt, customer answer) pairs; answers hold obfuscated personal data. The first six of
# each set are always asked (name, e-mail, phone, birth date, SSN, billing address).
_VERIFY = Frames(
    train=(
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
    ),
    eval=(
        ("Can I get the account holder's full name, please?", "«@chat»{c_name_x}«@cafter»"),
        ("What e-mail is the login tied to?", "«@chat»{c_email_x}«@cafter»"),
        ("Which mobile number do you want the codes sent to?", "«@chat»{c_phone_x}«@cafter»"),
        ("For security, what's your date of birth?", "«@chat»{c_dob_x}«@cafter»"),
        ("Last check: the Social Security number on file?", "«@chat»{c_ssn_x}«@cafter»"),
        ("And the billing address we have for you?", "«@chat»{c_addr_x}«@cafter»"),
        ("Does anybody else have access to the account?", "«@chat»{k_name}, {k_phone_x} (my {k_rel})"),
        ("Can you spell out your surname?", "«@chat»{c_last} - {c_last_spelled}«@cafter»"),
        ("Any second number in case the line drops?", "«@chat»{c_phone_y}«@cafter»"),
        ("Is there a different address we can mail the reset link to?", "«@chat»{c_email_y}«@cafter»"),
        ("Could you give me the other user's name once more?", "«@chat»{k_name_x}«@cafter»"),
        ("What's the delivery address for the new security key?", "«@chat»{c_addr_ship}«@cafter»"),
        (
            "Where do the receipts go?",
            "«@chat»{c_email_work}«@cafter» («the work one|work address|my work mail|the office one»)",
        ),
    ),
)
_EMAILS = Frames(
    train=(
        "\n--- e-mail attached to the ticket ---\nFrom: {c_name} <{c_email}>\n"
        "Subject: Re: [{case}] still locked out\n\n{greet} {a_greet},\n\nI tried the steps from yesterday but the "
        "app still shows {errcode}. {k_first} says the same thing happens on the family tablet.\n\nThanks,\n"
        "{c_first}\n--- end of e-mail ---\n\n",
        "\n> forwarded note from the customer ({c_email}):\n> Hello, this is {c_name}. Please close my old "
        "account and move the licence to the new one. My {k_rel} {k_name} can confirm by phone.\n\n",
    ),
    eval=(
        "\n--- «message attached to case|forwarded e-mail|customer e-mail|inbound mail» ---\n«@as_» {c_name} "
        "<{c_email}>, «via|from|by|through» {system}\nRe: case {case}, still cannot log "
        "in\n\n«Hi|Hello|Hey|Dear» «desk|team|support|folks» {site}, "
        "{a_greet},\n\nStill getting {errcode} after following yesterday's steps. Same story on the family tablet, "
        "«@as_» {k_first}«@after»\n\n{c_first} ({c_email})\n--- end of message ---\n\n",
        "\n> «note passed on by the account holder|note from the customer|forwarded by the holder», «@as_» "
        "{c_name} <{c_email}>:\n> Kindly shut down my old account and transfer the licence to the new one. "
        "«@as_» {k_name} (my {k_rel}) will confirm over the phone.\n\n",
    ),
)
_CLOSERS = Frames(
    train=(
        ("Agent", "You're all set. The case {case} stays open for 7 days if anything else comes up."),
        ("Customer", "thanks {a_first}, that worked"),
        ("Agent", "Glad to help! You'll get a short survey by email. Have a good day."),
    ),
    eval=(
        ("Agent", "Done on my side. Case {case} remains open for a week in case you need us again."),
        (
            "Customer",
            "«that did it|that worked|all good now|sorted|perfect|brilliant|great», «cheers|thanks|thank you|ta|"
            "thx|many thanks» to the {site} «desk|team|folks»",
        ),
        ("Agent", "Happy to help. A two-question survey will follow by email. Take care."),
    ),
)
# Speaker tags: how an agent's lines are labelled (the name is personal data) and the customer's
# tag, per partition. Each agent style is (prefix, suffix) around the name, or None for no name.
_AGENT_TAGS = Frames(
    train=(None, ("Agent ", ""), ("Support (", ")"), None),
    # Eval agents are named by display name and their site, a made-up place word drawn per document
    # ('Amy (Fernbrook desk):'); a fifth of eval transcripts name no agent in the tags.
    eval=(("«@tag»", ""), None),
)
LEXICON.update(
    tag=(
        "«@tag_word»{site} · ",
        "«@tag_word»{site}/",
        "[«@tag_word»{site}] ",
        "«@tag_word»{site} - ",
        "(«@tag_word»{site}) ",
        "«@tag_word»{site} | ",
        "«@tag_word»{site}: ",
        "«@tag_word»{site} > ",
    ),
    tag_word=("", "", "", "desk ", "team ", "support ", "care ", "help ", "CS ", "service ", "agents ", "office "),
    jk=tuple(k.rstrip("=") for k in LEXICON["kv"]),
    flag=(
        "true",
        "false",
        "on",
        "off",
        "yes",
        "no",
        "all",
        "none",
        "en",
        "fr",
        "de",
        "es",
        "json",
        "xml",
        "html",
        "asc",
        "desc",
        "full",
        "lite",
        "web",
        "app",
        "ios",
        "android",
        "beta",
        "live",
    ),
)
#: How an eval transcript stamps its chat lines (training transcripts: '[10:02:33] ').
_EVAL_CHAT_TIMES = ("[%H:%M:%S] ", "%H:%M:%S ", "(%H:%M) ", "%H:%M - ", "[%H:%M] ", "%H:%M:%S | ", "<%H:%M:%S> ")
_CUSTOMER_TAGS = Frames(train=("Customer",), eval=("Visitor", "Caller", "Member"))


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

    ``held_out`` (documents of the eval partition) takes the eval phrasings of every chat line,
    speaker tag, e-mail and log line that holds personal data (logs in the eval layout), and
    allows the forms of :mod:`.heldout` for the customer's answers, a phone number sent in two
    messages, agents named only by their display name, and openers that name the agent without
    the usual introduction.
    """
    c = make_person(rng, fake, fictional=held_out)
    k = make_person(rng, fake, fictional=held_out)
    x = make_person(rng, fake, fictional=held_out)
    agent = make_person(rng, fake, fictional=held_out)
    site = fictional_surname(rng) if held_out else ""  # the agents' site ('Drosimth desk'), a made-up word

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
        # Eval documents name their records system, a made-up word, wherever a value is "recorded in" it.
        "system": system_name(rng) if held_out else "",
        "site": site,
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
        "greet": "hey" if casual_mail else "Hello" if held_out else "Hi",
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
                f"{c.first.lower()}{fictional_surname(rng).lower()[:4]}"
                if held_out
                else f"{c.first.lower()}{rng.randrange(10, 99)}",
                pick(rng, ("gmail.com", "outlook.com", "proton.me")),
                rng,
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
        at = tick(1, 40)
        # Eval logs use another layout, timestamps included ('2023-04-01 10:00:00,123').
        ts = at.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] if held_out else at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
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
        b.text(tick(5, 90).strftime(chat_time))
        if speaker == "Agent" and agent_tag is not None:
            prefix, suffix = agent_tag
            b.text(prefix or "")
            b.entity("NAME", agent.first)
            b.text(suffix)
        elif speaker == "Agent":
            b.text("Support desk" if held_out else "Agent")
        else:
            b.text(customer_tag)
        b.text(": ")
        b.fill(template, ctx)
        b.text("\n")

    def log_block(pii: list[str]) -> None:
        svc, host = pick(rng, svc_hosts)
        b.text("\n")
        b.fill(pick(rng, _LOG_HEADERS), {"svc": svc, "host": host})
        lines = rng.sample(log_lines, rng.randrange(2, 6))
        count = len(pii) if len(b) >= min_chars - closers_len else min(len(pii), rng.randrange(1, 4))
        for _ in range(count):
            lines.insert(rng.randrange(len(lines) + 1), pii.pop())
        for line in lines:
            log_line(line, svc, host)
        b.text("\n")

    b = Builder(rng if held_out else None)
    if held_out:
        preamble(b, rng)
    b.fill(pick(rng, _HEADERS), ctx)
    # Agents named on every line add many entities, so those transcripts carry fewer others. Eval
    # agents are mostly named by their display name alone ('Amy (agent)').
    chat_time = pick(rng, _EVAL_CHAT_TIMES) if held_out else "[%H:%M:%S] "
    if held_out:
        style = _AGENT_TAGS.eval[0]
        assert style is not None
        agent_tag = (vary(rng, style[0] or "").format(site=site), "") if rng.random() < 0.8 else None
    else:
        agent_tag = pick(rng, _AGENT_TAGS.train)
    customer_tag = pick(rng, _CUSTOMER_TAGS.of(held_out))
    named = agent_tag is not None
    log_lines = (*_LOG_LINES_BY_PARTITION.eval, *_DECOY_LOG_LINES) if held_out else _LOG_LINES_BY_PARTITION.train
    pii_logs = rng.sample(_PII_LOG_LINES.of(held_out), rng.randrange(3, 6) if named else rng.randrange(4, 9))
    if held_out:  # swap some log lines for held-out encodings
        swaps = rng.sample(_PII_LOG_LINES_HELD_OUT, min(len(pii_logs), rng.randrange(3, 6)))
        pii_logs = swaps + pii_logs[len(swaps) :]
        rng.shuffle(pii_logs)
    asked = _VERIFY.of(held_out)
    verify = list(asked[:6])
    rng.shuffle(verify)
    verify += rng.sample(asked[6:], rng.randrange(1, 4) if named else rng.randrange(3, 7))
    tech = [*_TECH, *_TECH_PII.of(held_out)]
    rng.shuffle(tech)
    email = [pick(rng, _EMAILS.of(held_out))] if rng.random() < 0.5 else []
    extras = rng.sample(_LOOK_ALIKES, rng.randrange(5, 9) if held_out else rng.randrange(4, 8))
    split_phone = novel(0.5)
    if rng.random() < 0.4:
        b.fill(_BOT_OPENER, {**ctx, "time": tick(1, 30).strftime("%H:%M:%S")})
    speaker, opener = pick(rng, _OPENERS.of(held_out))
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
            if split_phone and "{c_phone_x}" in answer:
                # Sent in two messages: each part is its own PHONE entity.
                if held_out:
                    chat("Customer", "«@chat»{c_phone_p1}")
                    chat(
                        "Customer",
                        "{c_phone_p2} «sorry|oops|argh|sry|whoops», «hit enter too soon|sent too early|"
                        "fat fingers|pressed enter|typo»",
                    )
                else:
                    chat("Customer", "number is {c_phone_p1}")
                    chat("Customer", "{c_phone_p2} sorry, hit enter too soon")
            else:
                chat("Customer", answer)
            if rng.random() < 0.4:
                svc, host = pick(rng, svc_hosts)
                b.text("    >> ")
                log_line(pick(rng, log_lines), svc, host)
        elif email and roll < 0.8:
            b.fill(email.pop(), ctx)
        elif tech and roll < 0.9:
            speaker, line = tech.pop()
            chat(speaker, line)
        else:
            log_block([])
    b.text("\n")
    for speaker, line in _CLOSERS.of(held_out):
        chat(speaker, line)
    while len(b) < min_chars:
        log_line(pick(rng, log_lines), *pick(rng, svc_hosts))
    return b.result()
