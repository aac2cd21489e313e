"""Easy tier: agreements between a company and private individuals, with plainly written PII.

Every clause, party block and signature block that holds personal data comes in two disjoint
sets of phrasings (:class:`~.common.Frames`): training documents use the first, eval documents
the second, so the lines around the values differ while the values are written alike.
"""

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
    Frames,
    Slot,
    between,
    brand,
    code,
    company,
    fmt_date,
    make_person,
    money,
    pick,
    preamble,
    product,
    relation,
    system_name,
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

_PARTIES = Frames(
    train=(
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
    ),
    eval=(
        'This {title_lc} («this "Contract"|the "Contract"|this "Deed"|the "Terms"|this "Instrument"») '
        "«takes effect|becomes effective|is effective|enters into force» «on|from|as of|with effect from» {eff}. "
        "«It is entered into|It is concluded|It is made|It is agreed» by {co}, "
        "«organised|incorporated|registered|formed» "
        "under the laws of {state_law}, «@as_» {co}; «its officer|its signatory|its representative|"
        "its delegate|the officer signing», its {rep_title}, «@as_» {rep}«@after» «And|Also|Further» by «the "
        "{role}|the other party|the second party|the counterparty»:\n«@ind»«@as_» {p_name}, "
        "{p_addr}\n«@ind»«@as_» {p_name}, {p_phone}\n"
        "«Correspondence|Letters|Written notices|Mail|Post|Paperwork» for the {role} «@to» {p_name} "
        "<{p_email}>«@after»\n\n",
        '«THE PARTIES|PARTIES|Parties|The parties|Contracting parties»«:| -|.|:-» {co} (the «"Firm"|"Company"|'
        '"Business"|"Provider"»), «@as_» {co}, «signed by|represented by|through officer|by|per» '
        "its {rep_title} «@as_» {rep}; «and the {role}|and the counterparty|and the second party»:\n"
        "«@ind»«@as_» {p_name}\n«@ind»«@as_» {p_addr}\n«@ind»«@as_» {p_phone}\n«@ind»«@as_» {p_email}\n«Both "
        "parties accept|The parties accept|"
        "The parties agree to|Each party accepts» the following terms for the {purpose}.\n\n",
        "«Parties to this contract|Contracting parties|Who is bound|The parties|PARTIES»\n«@ind»«First party|Party A|"
        "Party one|1.|(a)»«@lead»{co}\n«@ind»«Office|Title|Capacity» of "
        "signatory«@lead»{rep_title}\n«@ind»«@as_» {rep}\n"
        "«@ind»«Second party|Party B|Party two|2.|(b)»«@lead»{role}\n«@ind»«@as_» {p_name}, "
        "{p_addr}\n«@ind»«@as_» {p_name} "
        "<{p_email}>\n«@ind»«@as_» {p_name}, {p_phone}\n\n",
        "«@ind»«@as_» {p_name}, {p_addr}\n«@ind»«@as_» {p_name}, {p_phone}\n«@as_» «the undersigned|the "
        "signatory|the signing party|the "
        "{role}», «accepts|agrees to|takes on|signs up to» the terms below set by {co} for the {purpose}. «Messages|"
        "Mail|Notes|E-mails|Letters» «@to» {p_name} <{p_email}>«@after»\n\n",
        "«Contracting company|Company|Firm|Business|Provider»«@lead»{co}\n«Role|Capacity|Party»«@lead»{role}\n"
        "«@ind»«@as_» {p_name}\n«@ind»«@as_» {p_addr}\n«@ind»«@as_» {p_email}\n«@ind»«@as_» {p_phone}\n«Signing "
        "for the company|Company officer|"
        "Authorised officer|Signatory for the firm» («@as_» {rep_title}):\n«@ind»«@as_» {rep}\n\n",
        "{role}:\n«@ind»«@as_» {p_name}\n«@ind»«@as_» {p_addr}\n«@ind»«@as_» {p_name} <{p_email}>\n«@ind»«@as_» "
        "{p_phone}\n\n«For the company|"
        "Company|Counterparty|Other party»:\n«@ind»{co}\n«@ind»{rep_title}\n«@ind»«@as_» {rep}\n\n",
    ),
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

#: Eval-only clauses without personal data that use the eval sentences' connectors before other
#: values (companies, products, states, teams, amounts): the words before a value say nothing of its kind.
_DECOYS = (
    "Billing. Invoices «@to» «the Accounts Payable team|Accounts Payable|the finance desk|the billing "
    "office» of {co}«@after» The monthly fee, «@as_» {fee}, is paid against purchase order «@as_» "
    "{po}.",
    "Product. The platform «@as_» {product}«@after» Support requests «@to» «the Service Desk|the "
    "{brand} team|Customer Operations|the help centre»«@after»",
    "Law. The governing law «@as_» {state_law}«@after» Disputes «@to» «the courts of {state_law}|"
    "the Arbitration Panel|the Contracts Office|Legal Services»«@after»",
    "Counterparty. The contracting company «@as_» {co}«@after» Its service line «@as_» {brand} "
    "«Services|Cloud|Works»«@after» Questions «@at» «the Contracts Office|the Legal Department|Client "
    "Relations»«@after»",
    "Records. The master file «@as_» {sched}«@after» The security policy «@as_» {policy}«@after» "
    "Audits «@to» «Internal Audit|the Compliance Team|Group Risk»«@after»",
    "Costs. Expenses «@to» cost center {cost_center}«@after» The cap «@as_» {cap} per quarter"
    "«@after» Receipts «@to» «Travel Services|the Expenses Unit|Procurement Support»«@after»",
    "Role. The contracting party «@as_» the {role}«@after» The purpose «@as_» {purpose}«@after»",
)

_NOTICES = Frames(
    train=(
        "Notices. Notices to the {role} go to {p_name}, {p_addr}, with a copy by e-mail to {p_email}. "
        "Notices to the Company go to the Legal Department, attention {rep}, ext. {ext}.",
        "Notices. Written notice is effective when delivered. For the {role}: {p_name} at {p_email} "
        "(mobile {p_phone2}). For the Company: {rep}, reference {ref}.",
        "Contacts. Day-to-day questions go to {p_first} at {p_phone2}; contractual notices go to "
        "{p_email} and to the Company's contract desk (ext. {ext}), quoting {ref}.",
    ),
    eval=(
        "Notices. «Formal notices|Notices|Written notices|Any notice|Legal notices» «for|to|meant for|intended "
        "for» the "
        "{role} «@to» {p_name}, {p_addr}«@after» «E-copies|Copies by e-mail|A copy|Electronic copies|"
        "Duplicates» «@to» {p_name} <{p_email}>«@after» «Notices to the Company|Company notices|The "
        "Company's notices» «@to» {rep}«@after» «Extension|Ext.|Internal line|Desk» {ext}.",
        "Notices. «A notice takes effect on receipt|Notice is effective when received|A notice counts once delivered». "
        "«The {role}'s notices|Notices for the {role}|Notices» «@to» {p_name} <{p_email}>«@after» «Urgent "
        "matters|Calls|Anything urgent» «@to» {p_name}, {p_phone2}«@after» «The Company|Company notices|The "
        "firm» «@to» {rep}«@after» «Quote|Cite|Reference|Ref.» {ref}.",
        "«Points of contact|Contacts|Who to contact|Day-to-day contact|Routine contact». «Routine queries|Everyday "
        "questions|Quick questions|Routine matters|Queries» «@to» {p_first} {p_phone2}«@after» «Formal "
        "notices|Notices|Official mail|Formal mail» «@to» {p_name} <{p_email}>«@after» «Also|Copy|In "
        "addition|Plus» the contracts office («extension|ext.|line» {ext}), «with "
        "reference|quoting|ref.|citing» {ref}.",
    ),
)

_EXTRAS = Frames(
    train=(
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
    ),
    eval=(
        "«Emergencies|In an emergency|Emergency contact|Urgent contact|If unreachable». «If the {role} cannot be "
        "reached|When the {role} is unavailable|In case of emergency|Should the {role} be unreachable», the Company "
        "«may call|can phone|may contact|may try» «the {role}'s {k_rel}|a {k_rel} of the {role}|the {k_rel}|next of "
        "kin ({k_rel})» «@as_» {k_name}, {k_phone}«@after»",
        "«Tax Details|Tax information|Taxes|Tax reporting|W-9». «The Social Security Number|For the W-9, the "
        "SSN|The SSN "
        "for the W-9|For tax reporting, the SSN|W-9 Social Security Number» of «the {role}|the party|the payee|the "
        "person» «@as_» {p_name}, {p_ssn}«@after» «Payments go under|The Company pays under|Paid under|Payee "
        "reference:» «supplier|vendor|payee|creditor» number {vendor}.",
        "«Age Check|Identity check|ID verification|Age verification|KYC». «The birth date|The date of birth|"
        "The birthday|Birth date» of «the {role}|the party|the signatory|the person» «@as_» {p_name}, {p_dob}, "
        "«was checked on {verif} against a government ID|was seen on an official document on {verif}|was verified on "
        "{verif}|was confirmed on {verif}» («check|ref.|record|file» {verif_ref}).",
        "«Surety|Guarantee|Guarantor|Security». «The surety|The guarantor|The person standing surety|The backer» "
        "«@as_» {k_name}, {k_addr}«@after» «Mail for the surety|Letters to the guarantor|The guarantor's "
        "mail|Surety mail» «@to» {k_name} <{k_email}>«@after»",
        "«Company Representative|Company lead|Project owner|Decision maker|Company contact». «The person who takes "
        "the day-to-day decisions for the Company|The Company's day-to-day decision maker|Deliverables for the "
        "Company are approved by the person|The project owner for the Company» «@as_» {lead}«@after» "
        "«Sign-off|Approval|Acceptance» within ten business days; «delegation|hand-over|a deputy» «@to» "
        "{lead_first} «or|and then|and from there» the {brand} team.",
        "«Shared Residence|Household|Same address|Co-resident». «A person sharing the {role}'s home|The {role}'s "
        "housemate|Someone living with the {role}|The co-resident» «@as_» {k_name}, {k_phone}«@after»",
    ),
)

_SIGNATURES = Frames(
    train=(
        "IN WITNESS WHEREOF the parties sign this Agreement.\n\n{co}\nBy: {rep}\nTitle: {rep_title}\n"
        "Date: {sign}\n\n{role_uc}\nBy: {p_name}\nDate: {sign}\n",
        "Signed for and on behalf of {co}:\n/s/ {rep}, {rep_title}, {sign}\n\nSigned by the {role}:\n"
        "/s/ {p_name}, {sign}\n",
        "SIGNATURES\n{role}: ____________________  {p_name}    Date: {sign}\nCompany: __________________  "
        "{rep} ({rep_title})    Date: {sign}\n",
        "Accepted on {sign}.\n\n{p_name} ({role})\n\n{rep}\n{rep_title}, {co}\n",
        "Signed on {sign} by {p_name} and, for {co}, by {rep}.\n",
        "Sincerely,\n\n{rep}\n{rep_title}\n\nAgreed and accepted: {p_name}, {sign}\n",
    ),
    eval=(
        "«EXECUTED by the parties on the dates below|EXECUTED as follows|SIGNED by the parties|Signatures follow».\n\n"
        "«For|On behalf of|Signed for» {co}\n«Capacity|Title|Role|Office»«@lead»{rep_title}\n«@ind»«@as_» {rep}\n"
        "«Signed on|Date|Dated|On»«@lead»{sign}\n\n«The {role}|{role}|For the {role}|Second "
        "party»\n«@ind»«@as_» {p_name}\n"
        "«Signed on|Date|Dated|On»«@lead»{sign}\n",
        "«For and on behalf of|For|On behalf of|Signed for» {co}:\n«@ind»«@as_» {rep}\n{rep_title} «- dated|, on|/|; "
        "date:» {sign}\n\n«For the {role}|The {role}|{role}»:\n«@ind»«@as_» {p_name}\n«dated|on|signed|date:» {sign}\n",
        "«SIGNATURE PAGE|SIGNATURES|EXECUTION|SIGNED»\n____________________\n«@ind»«@as_» {p_name}\n{role}, {sign}\n"
        "____________________\n«@ind»«@as_» {rep}\n{rep_title}, {co}, {sign}\n",
        "«Agreed on|Accepted on|Concluded on|Settled on» {sign}.\n\n«@ind»«@as_» "
        "{p_name}\n{role}\n\n«@ind»«@as_» {rep}\n"
        "{rep_title}, {co}\n",
        "«Signatures|Signed|Executed» «on|as of|dated» {sign}: «the {role}|the first signatory|one party» «@as_»"
        " {p_name}«@after» «For|On behalf of|Signing for» {co}, «@as_» {rep}«@after»\n",
        "«Yours faithfully|Kind regards|With regards|Sincerely yours|Respectfully»,\n\n«@ind»«@as_» "
        "{rep}\n{rep_title}, {co}\n\n"
        "«Read and accepted|Accepted|Agreed|Countersigned» «on|as of|dated» {sign}:\n«@ind»«@as_» {p_name}\n",
    ),
)

_SCHEDULE = (
    "Schedule A item {n}: {product}, serial {serial}, list price {fee}.",
    "Schedule A item {n}: onboarding workshop, {days} days, fixed price {cap}.",
    "Schedule A item {n}: support plan tier {tier}, ticket queue {queue}.",
)

_REP_TITLES = ("Chief Operating Officer", "General Counsel", "VP Procurement", "Director of Operations", "CEO")


def build(rng: Random, fake: Faker, min_chars: int, held_out: bool = False) -> tuple[str, tuple[Entity, ...]]:
    """Build one agreement of at least ``min_chars`` characters.

    ``held_out`` (documents of the eval partition) takes the eval phrasings of every party block,
    clause and signature block that holds personal data; the values are drawn alike.
    """
    title, role, purpose = pick(rng, _KINDS)
    person = make_person(rng, fake, fictional=held_out)
    rep = make_person(rng, fake, fictional=held_out)
    kin = make_person(rng, fake, fictional=held_out)
    lead = make_person(rng, fake, fictional=held_out)
    co = company(rng, fake)
    phone_style = rng.randrange(5)
    eff = between(rng, EVENT_FIRST + timedelta(days=31), EVENT_LAST)  # signing and checks come before it
    date_style = rng.randrange(4)
    ctx: dict[str, Slot] = {
        # Eval documents name their records system, a made-up word, wherever a value is "recorded in" it.
        "system": system_name(rng) if held_out else "",
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
    b = Builder(rng if held_out else None)
    if held_out:
        preamble(b, rng)
    b.fill(pick(rng, _HEADERS), ctx)
    if held_out:
        b.fill("«@opt»«@opt»«@opt»", ctx)  # eval documents: a few more lines before the parties, or none
    b.fill(pick(rng, _PARTIES.of(held_out)), ctx)
    if rng.random() < 0.6:
        b.fill(pick(rng, _RECITALS), ctx)
    clauses = [*_FILLER, *(_DECOYS if held_out else ())]
    rng.shuffle(clauses)
    extras = rng.sample(_EXTRAS.of(held_out), rng.randrange(1, 3))
    pii_clauses = [pick(rng, _NOTICES.of(held_out)), *extras]
    number = 1
    signature = pick(rng, _SIGNATURES.of(held_out))
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
