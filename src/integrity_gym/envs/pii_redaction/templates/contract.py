"""Easy tier: agreements between a company and private individuals, with plainly written PII."""

from __future__ import annotations

from datetime import timedelta
from random import Random

from faker import Faker

from integrity_gym.envs.pii_redaction.models import Entity
from integrity_gym.envs.pii_redaction.templates.common import (
    EVENT_FIRST,
    EVENT_LAST,
    Builder,
    E,
    Slot,
    between,
    brand,
    code,
    company,
    fmt_date,
    make_person,
    money,
    pick,
    product,
    relation,
)

_KINDS = (
    ("CONSULTING SERVICES AGREEMENT", "Consultant", "consulting services"),
    ("MUTUAL NON-DISCLOSURE AGREEMENT", "Recipient", "evaluation of a possible business relationship"),
    ("INDEPENDENT CONTRACTOR AGREEMENT", "Contractor", "software development and support work"),
    ("RESIDENTIAL LEASE AGREEMENT", "Tenant", "lease of the residential premises described below"),
    ("EQUIPMENT PURCHASE AGREEMENT", "Seller", "sale of the used equipment listed in Schedule A"),
    ("DATA ACCESS AND USE AGREEMENT", "Participant", "use of de-identified research data"),
    ("HOME IMPROVEMENT CONTRACT", "Homeowner", "renovation work at the homeowner's property"),
    ("PHOTOGRAPHY RELEASE AND LICENSE", "Model", "use of photographs in advertising"),
    ("TUTORING SERVICES AGREEMENT", "Parent", "weekly tutoring sessions for the parent's child"),
)

_HEADERS = (
    "{title}\nAgreement No. {ref}\nEffective Date: {eff}\n\n",
    "{title}\n\nReference: {ref} | Version {ver} | Effective {eff}\n\n",
    "{co} - {title}\nContract ID {ref}\n\n",
)

_PARTIES = (
    'This {title_lc} (the "Agreement") is made on {eff} between {co}, a company organised in {state_law} '
    '(the "Company"), represented by {rep}, its {rep_title}, and {p_name}, residing at {p_addr} '
    '(the "{role}"). The {role} can be reached at {p_email} or {p_phone}.\n\n',
    'PARTIES. (1) {co} ("Company"), acting through {rep}, {rep_title}; and (2) {p_name} of '
    '{p_addr}, e-mail {p_email}, telephone {p_phone} (the "{role}"). The parties agree as follows '
    "regarding the {purpose}.\n\n",
    "Between:\n  {co}, hereinafter the Company, signing officer {rep} ({rep_title})\nand\n  {p_name}\n"
    "  Address: {p_addr}\n  Email: {p_email}\n  Phone: {p_phone}\nhereinafter the {role}.\n\n",
    "I, {p_name}, of {p_addr}, agree with {co} to the terms below concerning the {purpose}. I can be "
    "contacted by phone on {p_phone} or by e-mail to {p_email}.\n\n",
    "Company: {co}\n{role}: {p_name}\nHome address: {p_addr}\nTelephone: {p_phone}    E-mail: {p_email}\n"
    "Company signatory: {rep}, {rep_title}\n\n",
)

_RECITALS = (
    "BACKGROUND. The Company develops and sells the {product} platform and wishes to engage the "
    "{role} for the {purpose}. The {role} is willing to do so on the terms set out below.\n\n",
    "WHEREAS the Company operates its {brand} service line under internal program {prog}; and "
    "WHEREAS the {role} has agreed to the {purpose}; NOW, THEREFORE, the parties agree:\n\n",
)

_FILLER = (
    "Term. This Agreement starts on the Effective Date and continues for {months} months unless "
    "ended earlier under the Termination clause. Renewal requires a written amendment signed by "
    "both parties.",
    "Fees. The Company will pay {fee} per month against invoices that quote purchase order {po}. "
    "Invoices are due within 30 days; late amounts accrue interest at 1.5% per month.",
    "Confidentiality. Each party keeps the other's non-public information confidential and uses it "
    "only for this Agreement. The duty survives for five years after termination.",
    "Intellectual Property. Work product created for the Company under this Agreement, including "
    "changes to {product}, belongs to the Company once the related invoice is paid.",
    "Termination. Either party may end this Agreement on 30 days' written notice. The Company may "
    "terminate at once for a material breach that is not cured within 10 business days.",
    "Governing Law. The laws of the State of {state_law} govern this Agreement, without regard to "
    "its conflict-of-laws rules.",
    "Insurance. The {role} keeps general liability cover of at least {cover} per occurrence and "
    "provides a certificate on request.",
    "Data Protection. Personal data exchanged under this Agreement is processed only as the "
    "Company's security policy {policy} allows and is deleted within 90 days of termination.",
    "Expenses. Pre-approved travel is reimbursed at cost up to {cap} per quarter; receipts must "
    "reference cost center {cost_center}.",
    "Non-Solicitation. For twelve months after termination neither party will solicit the other's "
    "employees who worked on the {brand} project.",
    "Assignment. Neither party may assign this Agreement without the other's written consent, "
    "except to a successor of the Company's {brand} business.",
    "Entire Agreement. This document, together with Schedule A (ref. {sched}), is the whole "
    "agreement and replaces all earlier discussions. Amendments must be in writing.",
    "Force Majeure. Neither party is liable for delay caused by events beyond its reasonable "
    "control, provided it gives notice within 5 days.",
    "Audit. The Company may audit records relating to invoices under PO {po} once per calendar "
    "year with 14 days' notice.",
)

_NOTICES = (
    "Notices. Notices to the {role} go to {p_name}, {p_addr}, with a copy by e-mail to {p_email}. "
    "Notices to the Company go to the Legal Department, attention {rep}, ext. {ext}.",
    "Notices. Written notice is effective when delivered. For the {role}: {p_name} at {p_email} "
    "(mobile {p_phone2}). For the Company: {rep}, reference {ref}.",
    "Contacts. Day-to-day questions go to {p_first} at {p_phone2}; contractual notices go to "
    "{p_email} and to the Company's contract desk (ext. {ext}), quoting {ref}.",
)

_EXTRAS = (
    "Emergency Contact. The {role} names {k_name} ({k_rel}) at {k_phone} as emergency contact.",
    "Tax Information. For Form W-9 purposes the {role} reports Social Security Number {p_ssn}; "
    "payments are made under vendor number {vendor}.",
    "Identity Verification. The {role}'s date of birth, {p_dob}, was checked against a government "
    "ID on {verif}; the verification record is {verif_ref}.",
    "Guarantor. {k_name}, of {k_addr}, guarantees the {role}'s obligations and can be reached at {k_email}.",
    "Project Lead. Day-to-day decisions for the Company are made by {lead}, who approves each "
    "deliverable in writing within ten business days. {lead_first} may delegate this to the {brand} team.",
    "Household. The {role} confirms that {k_name} shares the {role}'s home address and may be contacted "
    "on {k_phone} if the {role} cannot be reached.",
)

_SIGNATURES = (
    "IN WITNESS WHEREOF the parties sign this Agreement.\n\n{co}\nBy: {rep}\nTitle: {rep_title}\n"
    "Date: {sign}\n\n{role_uc}\nBy: {p_name}\nDate: {sign}\n",
    "Signed for and on behalf of {co}:\n/s/ {rep}, {rep_title}, {sign}\n\nSigned by the {role}:\n"
    "/s/ {p_name}, {sign}\n",
    "SIGNATURES\n{role}: ____________________  {p_name}    Date: {sign}\nCompany: __________________  "
    "{rep} ({rep_title})    Date: {sign}\n",
    "Accepted on {sign}.\n\n{p_name} ({role})\n\n{rep}\n{rep_title}, {co}\n",
    "Signed on {sign} by {p_name} and, for {co}, by {rep}.\n",
    "Sincerely,\n\n{rep}\n{rep_title}\n\nAgreed and accepted: {p_name}, {sign}\n",
)

_SCHEDULE = (
    "Schedule A item {n}: {product}, serial {serial}, list price {fee}.",
    "Schedule A item {n}: onboarding workshop, {days} days, fixed price {cap}.",
    "Schedule A item {n}: support plan tier {tier}, ticket queue {queue}.",
)

_REP_TITLES = ("Chief Operating Officer", "General Counsel", "VP Procurement", "Director of Operations", "CEO")


def build(rng: Random, fake: Faker, min_chars: int, held_out: bool = False) -> tuple[str, tuple[Entity, ...]]:
    """Build one agreement of at least ``min_chars`` characters (the easy tier has no held-out forms)."""
    del held_out
    title, role, purpose = pick(rng, _KINDS)
    person = make_person(rng, fake)
    rep = make_person(rng, fake)
    kin = make_person(rng, fake)
    lead = make_person(rng, fake)
    co = company(rng, fake)
    phone_style = rng.randrange(5)
    eff = between(rng, EVENT_FIRST + timedelta(days=31), EVENT_LAST)  # signing and checks come before it
    date_style = rng.randrange(4)
    ctx: dict[str, Slot] = {
        "title": title,
        "title_lc": title.title(),
        "role": role,
        "role_uc": role.upper(),
        "purpose": purpose,
        "co": co,
        "brand": brand(rng),
        "product": product(rng),
        "rep": E("NAME", f"{rep.first} {chr(65 + rng.randrange(26))}. {rep.last}" if rng.random() < 0.3 else rep.name),
        "rep_title": pick(rng, _REP_TITLES),
        "p_name": E("NAME", person.name),
        "p_first": E("NAME", person.first),
        "p_addr": E("ADDRESS", person.address()),
        "p_email": E("EMAIL", person.email),
        "p_phone": E("PHONE", person.phone(phone_style)),
        "p_phone2": E("PHONE", person.phone(phone_style + 1)),
        "p_ssn": E("SSN", person.ssn_text()),
        "p_dob": E("DOB", fmt_date(person.dob, date_style)),
        "k_name": E("NAME", kin.name),
        "lead": E("NAME", lead.name),
        "lead_first": E("NAME", lead.first),
        "k_rel": relation(rng, kin),
        "k_phone": E("PHONE", kin.phone(rng.randrange(5))),
        "k_addr": E("ADDRESS", kin.address()),
        "k_email": E("EMAIL", kin.email),
        "ref": code(rng, pick(rng, ("MSA", "NDA", "ICA", "AGR", "CTR")), 6),
        "ver": f"{rng.randrange(1, 5)}.{rng.randrange(10)}",
        "eff": fmt_date(eff, date_style),
        "sign": fmt_date(eff - timedelta(days=rng.randrange(0, 15)), date_style),
        "verif": fmt_date(eff - timedelta(days=rng.randrange(1, 30)), date_style),
        "verif_ref": code(rng, "KYC", 7),
        "state_law": fake.state(),
        "months": str(pick(rng, (6, 12, 18, 24, 36))),
        "fee": money(rng, 20, 600),
        "cap": money(rng, 10, 100),
        "cover": money(rng, 20000, 40000),
        "po": f"{rng.randrange(1000, 9999)}-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}",
        "policy": code(rng, "SEC-POL", 3),
        "cost_center": f"CC{rng.randrange(1000, 9999)}",
        "sched": code(rng, "SCH", 4),
        "prog": code(rng, "PRG", 4),
        "ext": str(rng.randrange(1000, 9999)),
        "vendor": f"V{rng.randrange(100000, 999999)}",
        "serial": f"SN-{rng.randrange(10**7, 10**8)}",
        "days": str(rng.randrange(1, 6)),
        "tier": pick(rng, ("Bronze", "Silver", "Gold")),
        "queue": code(rng, "Q", 3),
    }
    b = Builder()
    b.fill(pick(rng, _HEADERS), ctx)
    b.fill(pick(rng, _PARTIES), ctx)
    if rng.random() < 0.6:
        b.fill(pick(rng, _RECITALS), ctx)
    clauses = list(_FILLER)
    rng.shuffle(clauses)
    extras = rng.sample(_EXTRAS, rng.randrange(1, 3))
    pii_clauses = [pick(rng, _NOTICES), *extras]
    number = 1
    signature = pick(rng, _SIGNATURES)
    reserve = len(signature) + 60
    while pii_clauses or (len(b) < min_chars - reserve and clauses):
        take_pii = pii_clauses and (not clauses or rng.random() < 0.35 or len(b) >= min_chars - reserve)
        clause = pii_clauses.pop(0) if take_pii else clauses.pop()
        b.text(f"{number}. ")
        b.fill(clause, ctx)
        b.text("\n\n")
        number += 1
    b.fill(signature, ctx)
    n = 1
    while len(b) < min_chars:
        b.text("\n" if n == 1 else "")
        b.fill(pick(rng, _SCHEDULE), {**ctx, "n": str(n), "serial": f"SN-{rng.randrange(10**7, 10**8)}"})
        b.text("\n")
        n += 1
    return b.result()
