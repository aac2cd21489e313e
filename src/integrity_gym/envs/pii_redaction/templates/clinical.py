"""Medium tier: clinical notes, discharge summaries and referral letters with PII in context.

Names recur in prose (often surname only), birth dates follow cues such as ``DOB:`` or
``born on`` and look exactly like the admission and lab dates around them, and record numbers
(MRN, encounter, accession) are deliberately present but are not entities. Every header, section
and sign-off that holds personal data comes in two disjoint sets of phrasings
(:class:`~.common.Frames`): training documents use the first, eval documents the second.
"""

from __future__ import annotations

from datetime import date, timedelta
from random import Random

from faker import Faker

from integrity_gym.envs.pii_redaction.models import Entity
from integrity_gym.envs.pii_redaction.templates import heldout as ho
from integrity_gym.envs.pii_redaction.templates.common import (
    Builder,
    E,
    Frames,
    Person,
    Slot,
    between,
    brand,
    fictional_nickname,
    fictional_place_surname,
    fictional_surname,
    fmt_date,
    make_person,
    org_domain,
    org_phone,
    pick,
    preamble,
    relation,
    role_mailbox,
    system_name,
)

_CONDITIONS = (
    ("type 2 diabetes mellitus", "E11.9"), ("essential hypertension", "I10"),
    ("chronic obstructive pulmonary disease", "J44.9"), ("atrial fibrillation", "I48.91"),
    ("community-acquired pneumonia", "J18.9"), ("chronic kidney disease stage 3", "N18.30"),
    ("major depressive disorder", "F32.9"), ("hyperlipidemia", "E78.5"),
    ("osteoarthritis of the knee", "M17.11"), ("heart failure with reduced ejection fraction", "I50.22"),
    ("cellulitis of the lower leg", "L03.115"), ("asthma", "J45.909"),
    ("Parkinson disease", "G20"), ("Graves disease", "E05.00"), ("Crohn disease", "K50.90"),
    ("Hashimoto thyroiditis", "E06.3"), ("Bell palsy", "G51.0"),
)  # fmt: skip
_DRUGS = (
    "metformin 500 mg twice daily", "lisinopril 10 mg daily", "atorvastatin 40 mg at bedtime",
    "apixaban 5 mg twice daily", "furosemide 40 mg every morning", "sertraline 50 mg daily",
    "albuterol 90 mcg 2 puffs every 4 hours as needed", "amoxicillin-clavulanate 875 mg twice daily",
    "insulin glargine 18 units at night", "metoprolol succinate 25 mg daily",
    "acetaminophen 650 mg every 6 hours as needed", "pantoprazole 40 mg before breakfast",
)  # fmt: skip
_FACILITY = (
    "{brand} Regional Medical Center",
    "St. {saint} Hospital",
    "{brand} Community Health",
    "{street_word} Avenue Family Practice",
    "{brand} Valley Clinic",
    "Mercy {brand} Hospital",
)
_SAINTS = ("Agnes", "Jude", "Luke", "Vincent", "Mary", "Francis", "Joseph")
_STREET_WORDS = ("Maple", "Elm", "Lakeview", "Park", "Harbor", "Cedar")
_DOCTYPES = (
    "DISCHARGE SUMMARY", "PROGRESS NOTE", "CONSULTATION NOTE", "EMERGENCY DEPARTMENT NOTE",
    "REFERRAL LETTER",
)  # fmt: skip

# Surnames that are also the name of a condition in the same note: the eponym is not a name.
_EPONYMS = (
    ("Parkinson", "Parkinson disease", "G20"), ("Graves", "Graves disease", "E05.00"),
    ("Crohn", "Crohn disease", "K50.90"), ("Bell", "Bell palsy", "G51.0"),
    ("Addison", "Addison disease", "E27.1"), ("Barrett", "Barrett esophagus", "K22.70"),
    ("Paget", "Paget disease of bone", "M88.9"), ("Wilson", "Wilson disease", "E83.01"),
    ("Cushing", "Cushing syndrome", "E24.9"), ("Hodgkin", "Hodgkin lymphoma", "C81.90"),
    ("Baker", "Baker cyst of the right knee", "M71.21"),
)  # fmt: skip
# Eval notes name eponymous conditions after a made-up surname, the patient's own (the trap stays,
# the surname is new): 'Drosimth syndrome', coded under an "other specified" ICD-10 code.
_EVAL_EPONYM_KINDS = ("disease", "syndrome", "disorder", "palsy", "myopathy", "neuropathy", "dystrophy")
_EVAL_EPONYM_CODES = ("E88.89", "G31.89", "M35.8", "D89.89", "G72.89", "Q87.89", "E75.29", "G60.8")


def _eval_eponym(rng: Random) -> tuple[str, str, str]:
    name = fictional_surname(rng)
    return name, f"{name} {pick(rng, _EVAL_EPONYM_KINDS)}", pick(rng, _EVAL_EPONYM_CODES)


# Clinician surnames that are also place words; the same word then names a practice.
_WORD_SURNAMES = ("Park", "Hill", "Banks", "Church", "Marsh", "Wood", "Lane", "Brook", "Ford", "Hall", "Field", "Mills")
_PRACTICE_KINDS = ("Family Practice", "Medical Group", "Clinic", "Internal Medicine")

_HEADERS = Frames(
    train=(
        "{facility}\n{doctype}\n\nPatient: {p_name_h}\nDOB: {p_dob}\nMRN: {mrn}\nAdmitted: {adm}    "
        "Discharged: {dis}\nAttending: Dr. {d1_name_h}\nEncounter: {enc}\n\n",
        "{doctype} - {facility}\nName: {p_name_rev}   Date of birth: {p_dob}   Sex: {sex}\nRecord no. {mrn} | "
        "Visit {enc} | Date of service {adm}\nProvider: {d1_name_h}, MD\n\n",
        "{facility} | {doctype}\nPATIENT NAME: {p_name_h}\nD.O.B.: {p_dob}    MRN {mrn}\nADMISSION DATE: {adm}\n"
        "ATTENDING PHYSICIAN: {d1_name_h}, MD\nPCP: Dr. {d2_name}\n\n",
        "{facility}\n{doctype}\n\nClient: {p_name_h}     Birth date {p_dob}     Chart {mrn}\n"
        "Clinician: {d1_name_h}, NP     Seen: {adm}\n\n",
        "{doctype}\n{facility}, unit {bed}\n\n{p_name_rev_mid} | {sex} | DOB {p_dob} | MRN {mrn}\n"
        "Seen {adm} by {d1_name_h} with {d3_name} (resident)\n\n",
        # An EHR banner: surname first, birth date with no label, age and sex after it.
        "{facility} | {doctype}\n{p_banner}    {p_dob}    {age} y {sex}    MRN {mrn}    Adm {adm}\n"
        "Attending: {d1_name_h}, MD    Encounter {enc}\n\n",
    ),
    eval=(
        "{facility}\n{doctype}\n«@opt»«@opt»\n«Hospital no.|Hosp. "
        "no.|Record|Chart|File»«@lead»{mrn}\n«Admission|Admitted|In»«@lead»{adm}\n«Discharge|"
        "Discharged|Out»«@lead»{dis}\n«Specialty|Service|Team»«@lead»{specialty}\n«Episode|Encounter|Visit»«@lead»"
        "{enc}\n«Responsible consultant|Consultant|Lead clinician|Clinician in charge» «@as_» {d1_name_h}«@after»\n"
        "«The patient|Patient|Pt» «@as_» {p_name_h}, {p_dob}«@after»\n\n",
        "{doctype} | {facility}\n«@opt»«@opt»«Gender|Sex»«@lead»{sex}\n«Hospital number|Hosp. no.|Record "
        "no.»«@lead»{mrn}\n«Episode|"
        "Encounter|Visit»«@lead»{enc}\n«Attended|Seen|Admitted»«@lead»{adm}\n«Birth date of|DOB of|Born:» «@as_»"
        " {p_name_rev}, {p_dob}«@after»\n«Seen by|Clinician|Reviewing doctor|Doctor» «@as_» {d1_name_h}«@after»\n\n",
        "{facility} / {doctype}\n«@opt»«@opt»«HOSP NO|Hospital no.|MRN»«@lead»{mrn}\n«DATE ADMITTED|"
        "ADMITTED|ADMISSION»«@lead»{adm}\n«Ward|Unit|Bay»«@lead»{bed}\n«Consultant in charge|Consultant|Attending»"
        " «@as_» {d1_name_h}«@after»\n«Family doctor|GP|Primary care» «@as_» {d2_name}«@after»\n«Patient|Pt» «@as_» "
        "{p_name_h}, {p_dob}«@after»\n\n",
        "{facility}\n{doctype}\n«@opt»«@opt»\n«Service user|Client|Patient» «@as_» {p_name_h}, {p_dob}«@after»\n«File|"
        "Record|Chart»«@lead»{mrn}\n«Seen|Reviewed|Assessed»«@lead»{adm}\n«Nurse practitioner|NP|Practitioner»"
        " «@as_» {d1_name_h}«@after»\n«Service|Team»«@lead»{specialty}\n\n",
        "{doctype}\n{facility}, «bay|bed|room» {bed}\n\n«Pt|Patient|Name» «@as_» {p_name_rev_mid}, {sex}, "
        "{p_dob}«@after»\n«Hosp no|Record|File»«@lead»{mrn}\n«Reviewed|Seen»«@lead»{adm}\n«Reviewer|Reviewed by|"
        "Clinician» «@as_» {d1_name_h}«@after»\n«Resident|Junior|Trainee» «@as_» "
        "{d3_name}«@after»\n«Service|Team»«@lead»{specialty}\n\n",
        # An EHR banner in another layout: surname first, the birth date right after the name.
        "{facility} - {doctype}\n«@opt»«@opt»«Banner|Pt|Patient» «@as_» {p_banner} {p_dob} | {age}{sex} | «hospital no|"
        "record|MRN» {mrn} | «admitted|adm» {adm}\n«Consultant|Attending|Clinician» «@as_» "
        "{d1_name_h}«@after»\n«Episode|"
        "Encounter»«@lead»{enc}\n«Ward|Bay|Unit»«@lead»{bed}\n\n",
    ),
)
_LETTER_HEADERS = Frames(
    train=(
        "{facility}\nDepartment of {dept}\n{letter_date}\n\nDr. {d2_name}\n{facility2}\n\n"
        "RE: {p_name_h}, DOB {p_dob} (our ref. {mrn})\n\nDear Dr. {d2_last},\n\n"
        "Thank you for seeing {p_title} {p_last}, whom I am referring for further assessment of {cond}. "
        "I have summarised the relevant history below.\n\n",
        "{facility}\nDepartment of {dept}\n{letter_date}\n\nDr. {d2_name}\n{facility2}\n\n"
        "Re: {p_name_h} ({p_dob}) - our ref. {mrn}\n\nDear Dr. {d2_last},\n\n"
        "I would be grateful if you could see this {age}-year-old {sex_word} with {cond}. A summary "
        "of the history follows.\n\n",
    ),
    eval=(
        "{facility}\n{dept} department\n{letter_date}\n\n«To|For|Attn.» «@as_» {d2_name}, {facility2}\n\n"
        "«Patient|Re|Regarding» «@as_» {p_name_h}, {p_dob}«@after» «Hospital ref.|Our ref.|Ref.» {mrn}.\n\n"
        "«Dear Doctor|Dear colleague|Dear Dr»,\n\n«I am writing to ask you to assess|Please could you assess|I would "
        "value your review of|Kindly review» «the patient|this patient|our patient» «@as_» {p_name}«@after» "
        "«The patient has|Known problem:|Background:» {cond}. «The relevant background is set out below|A short "
        "history follows|Details follow».\n\n",
        "{facility}\n{dept} department\n{letter_date}\n\n«To|For|Attn.» «@as_» {d2_name}, {facility2}\n\n"
        "«Patient|Re|Regarding» «@as_» {p_name_h}, {p_dob}«@after» «Hospital ref.|Our ref.|Ref.» {mrn}.\n\n"
        "«Dear Doctor|Dear colleague|Dear Dr»,\n\n«Please could you review|I would be grateful if you could see|Could "
        "you kindly assess» this {age}-year-old {sex_word}, «@as_» {p_first}«@after» «Known|Background of|"
        "History of» {cond}. «A short history is given below|History below|Summary follows».\n\n",
    ),
)
_HPI = Frames(
    train=(
        "HISTORY OF PRESENT ILLNESS:\n{p_title} {p_last} is a {age}-year-old {sex_word} with {cond} "
        "({icd}) who came in on {adm} with {symptom} for {days} days. {p_pron_cap} reports {detail}. "
        "{p_first} was last seen in clinic on {prior}, when {p_pron} was stable.\n\n",
        "HPI: {age}-year-old {sex_word} (born on {p_dob2}) presenting with {symptom}. Background of "
        "{cond}, ICD-10 {icd}. According to {p_title} {p_last}, the symptoms began after {trigger}. "
        "{p_pron_cap} denies chest pain or recent travel.\n\n",
        "Reason for visit: {symptom}.\nThe patient, {p_name}, is known to our service for {cond} "
        "({icd}). {p_pron_cap} was seen by Dr. {d2_last} on {prior} and started on {drug1}.\n\n",
        "Presenting problem: {p_first} describes {symptom} for about {days} days on a background of {cond} "
        "({icd}). {p_pron_cap} came with {k_first}, who confirms the history.\n\n",
        "Subjective: {p_last} reports {symptom} since {prior}. Medication adherence is good except for "
        "{drug2}. {k_first} manages the pill organiser.\n\n",
    ),
    eval=(
        "PRESENTING COMPLAINT AND HISTORY:\n«The patient|This patient|Our patient», «@as_» {p_name}, aged {age}, "
        "a {sex_word} with known {cond} ({icd}), attended on {adm} after {days} days of {symptom}. {p_pron_cap} also "
        "notes {detail}. «At the last clinic review|At last review|When last seen» on {prior} «the patient|they|"
        "{p_pron}» «@as_» {p_first} «was well|was stable|was fine».\n\n",
        "HPI - {sex_word}, {age} years old, «born|birth date|date of birth» «@as_» {p_dob2}«@after» "
        "«Presents|Comes in|Attends» with {symptom}. Known {cond} (ICD-10 code {icd}). The onset, «as told "
        "by|according "
        "to|in the words of» «the patient|the pt|{p_poss} own account», «@as_» {p_last}, followed {trigger}. "
        "No chest pain; no travel abroad.\n\n",
        "Why seen: {symptom}.\n«The patient|This patient|Our patient» «@as_» {p_name}«@after» «Under our "
        "care|Known to us|Followed here» for {cond} ({icd}); {p_pron} saw «a colleague|the GP|our team», «@as_»"
        " {d2_last}, on {prior}, who started {drug1}.\n\n",
        "Main problem: roughly {days} days of {symptom}, on a background of {cond} ({icd}), in the words of the "
        "patient «@as_» {p_first}«@after» «The relative who came along|A relative present|The carer "
        "attending» «@as_» {k_first}«@after» «Agrees with the account|Confirms the history|Corroborates».\n\n",
        "Patient account: {symptom} since {prior}, «says|reports|states» «the patient|the pt|{p_pron}» «@as_»"
        " {p_last}«@after» Takes the medicines reliably apart from {drug2}; «the carer|a relative|the "
        "family member» «@as_» {k_first} «fills|prepares|sets up» the weekly dosette box.\n\n",
    ),
)
_SOCIAL = Frames(
    train=(
        "SOCIAL HISTORY: Lives with {p_poss} {k_rel}, {k_name}, at {p_addr}. Works as {job} at {employer}. "
        "{habits}\n\n",
        "Social: {p_pron_cap} lives alone at {p_addr} and is independent in daily activities. {habits} "
        "{p_poss_cap} {k_rel} {k_name} visits daily and helps with medications.\n\n",
        "Social and functional history: retired, formerly {job}; {k_rel} {k_first} is the main carer. Home address "
        "on file: {p_addr}. {habits}\n\n",
    ),
    eval=(
        "SOCIAL CIRCUMSTANCES: shares a home with {p_poss} {k_rel} «@as_» {k_name}«@after» «Home|Address|"
        "Residence» «@as_» {p_name}, {p_addr}«@after» Employed as {job} by {employer}. {habits}\n\n",
        "Home situation: {p_pron} lives on {p_poss} own, fully independent; «@as_» {p_name}, {p_addr}«@after» "
        "{habits} {p_poss_cap} {k_rel} «@as_» {k_name} «calls in|visits|drops by» every day to help with "
        "tablets.\n\n",
        "Functional and social background: no longer working (was {job}); main carer «@as_» {k_first} "
        "({p_poss} {k_rel}). «Registered home address|Address on record|Home address» «@as_» {p_name}, "
        "{p_addr}«@after» {habits}\n\n",
    ),
)
_CONTACTS = Frames(
    train=(
        "CONTACT DETAILS: patient mobile {p_phone}; portal e-mail {p_email}. Emergency contact: "
        "{k_name} ({k_rel}), {k_phone}.\n\n",
        "Contacts - Patient: {p_phone} / {p_email}. Next of kin: {k_name}, {k_rel}, tel. {k_phone}. "
        "Pharmacy fax is on the encounter record ({enc}).\n\n",
        "Preferred contact: {k_name} on {k_phone} (patient is hard of hearing). {p_title} {p_last} can "
        "also be reached at {p_email} for appointment reminders.\n\n",
    ),
    eval=(
        "HOW TO CONTACT: «the patient|patient|pt» «@as_» {p_name}, {p_phone}«@after» «E-mail|Portal mail|Mail» "
        "«@to» {p_name} <{p_email}>«@after» "
        "«In an emergency|Emergency|Next of kin» ({k_rel}) «@as_» {k_name}, {k_phone}«@after»\n\n",
        "«Telephone/e-mail|Contact details|Contacts» - «the patient|patient» «@as_» {p_name}, {p_phone}«@after» "
        "«E-mail|Portal mail|Mail» «@to» {p_name} <{p_email}>«@after» «Closest relative|Next of kin|Relative» "
        "({k_rel}) «@as_» {k_name}, "
        "{k_phone}«@after» The pharmacy fax number sits on episode {enc}.\n\n",
        "«Best contact|Preferred contact|Contact first» (the patient hears poorly) «@as_» {k_name}, {k_phone}"
        "«@after» «Appointment reminders|Reminders|Portal messages» «@to» {p_name} <{p_email}>«@after»\n\n",
    ),
)
_FILLERS = (
    "PAST MEDICAL HISTORY:\n- {cond} ({icd}), diagnosed {hist_date}\n- {cond2} ({icd2})\n- Appendectomy on "
    "{hist_date2}\n\n",
    "PROCEDURES: Foley catheter placed {lab_date}; removed after 48 hours. Glasgow Coma Scale 15 throughout. "
    "Prior Whipple-type surgery was ruled out on review of the {hist_year} records.\n\n",
    "MEDICATIONS ON ADMISSION:\n- {drug1}\n- {drug2}\n- {drug3}\n\n",
    "ALLERGIES: {allergy}.\n\n",
    "VITAL SIGNS: BP {bp} mmHg, HR {hr} bpm, temperature {temp} C, SpO2 {spo2}% on room air, weight "
    "{weight} kg. Bed {bed}.\n\n",
    "LABS ({lab_date}): WBC {wbc} x10^9/L, hemoglobin {hgb} g/dL, creatinine {creat} mg/dL, sodium "
    "{na} mmol/L, potassium {k} mmol/L, HbA1c {a1c}%. Accession {acc}.\n\n",
    "IMAGING: Chest X-ray on {lab_date} (study {acc}) showed {imaging}.\n\n",
    "PHYSICAL EXAMINATION: Alert and oriented. Heart regular, no murmur. Lungs with {lungs}. Abdomen "
    "soft and non-tender. Mild pitting edema at both ankles.\n\n",
    "ASSESSMENT AND PLAN:\n1. {cond} - continue {drug1}; review in {weeks} weeks.\n2. {cond2} - "
    "start {drug3}; recheck labs before the next visit.\n3. Diet and activity counselling given.\n\n",
    "NURSING NOTE ({lab_date2} {time}): patient resting, pain 3/10, tolerated diet. Family updated by "
    "phone. Fall-risk score {fall}.\n\n",
    "Care coordination: discussed with case manager; insurance group {group}, authorization "
    "{auth}. Home health referral to {agency} placed.\n\n",
)
# Fillers that name the patient, a relative or a clinician; the course entries repeat in long notes.
_PII_FILLERS = Frames(
    train=(
        "TELEPHONE NOTE ({lab_date2}): spoke with {k_first} about the discharge plan; questions answered. "
        "{p_first} agrees with the plan.\n\n",
        "HOSPITAL COURSE: On day {day} the patient was treated with {drug2} and IV fluids. Repeat labs "
        "on {lab_date2} showed creatinine {creat} mg/dL. Physical therapy cleared {p_title} {p_last} "
        "for discharge with a walker.\n\n",
        "Day {day} ({lab_date2}): afebrile overnight, oxygen weaned to {o2} L. Seen with Dr. {d3_last} "
        "from {specialty}; no change to the plan. Telemetry unit ext. {ext}.\n\n",
    ),
    eval=(
        "PHONE CALL ({lab_date2}): discharge plans talked through with «the relative|family|the carer» «@as_»"
        " {k_first}«@after» «The patient|Pt|Patient» «@as_» {p_first} «is happy with|agrees with|"
        "accepts» the plan.\n\n",
        "COURSE IN HOSPITAL: by day {day} «the patient|the pt|our patient» «@as_» {p_last} had received {drug2} "
        "and intravenous fluids. Creatinine on {lab_date2} was {creat} mg/dL. Cleared by physiotherapy to go home "
        "with a walking frame.\n\n",
        "Ward day {day} ({lab_date2}): no fever overnight; oxygen down to {o2} L. Reviewed jointly with {specialty} "
        "(«@as_» {d3_last}); plan unchanged. Telemetry extension {ext}.\n\n",
    ),
)
#: Eval-only lines without personal data that use the eval sentences' connectors before other values
#: (conditions, drugs, teams, places, employers): the words before a value say nothing of its kind.
_DECOYS = (
    "Problem list: «the main problem|the first problem|the lead diagnosis» «@as_» {cond}«@after» «The "
    "second|The other|A further» «@as_» {cond2}«@after»\n\n",
    "Medicines reconciliation: «the first drug|one medicine|the regular drug» «@as_» {drug1}«@after» «The "
    "next|Another|The second» «@as_» {drug3}«@after»\n\n",
    "Team: «the referring service|the parent team|the service» «@as_» {specialty}«@after» «The receiving "
    "unit|The destination|Follow-up» «@to» {facility2}«@after»\n\n",
    "Occupation: «the job|work|the occupation» «@as_» {job}«@after» «The employer|Employer|Work place» "
    "«@as_» {employer}«@after»\n\n",
    "Services: «home care|community support|the home health agency» «@as_» {agency}«@after» «The "
    "pharmacy|Dispensing|Prescriptions» «@to» {pharmacy}«@after»\n\n",
    "Imaging: «the chest film|the X-ray|the study» «@as_» {imaging}«@after» «The lungs|Auscultation|"
    "Chest» «@as_» {lungs}«@after»\n\n",
)

#: Fillers that may repeat once the others are used up (a long stay's daily entries).
_REPEATABLE = ("HOSPITAL COURSE", "Day {day}", "COURSE IN HOSPITAL", "Ward day {day}")
# Cues that do not introduce a birth date, and organisations' numbers and mailboxes (not PII).
_DOB_CUE_TRAPS = (
    "SAFETY CHECK: two-identifier check (name and date of birth) completed before the transfusion on "
    "{lab_date2} at {time}; unit {acc} verified at the bedside.\n\n",
    "Pharmacy note: name and date of birth confirmed at the discharge counter on {dis}; medication "
    "list reconciled with the patient.\n\n",
)
_BIRTH_CONTROL = "Gynecologic history: birth control pill stopped on {prior}; no hormone therapy since.\n\n"
_ORG_CONTACTS = (
    "Discharge prescriptions sent to {pharmacy} (tel. {org1}, fax {org2}).\n\n",
    "Questions after discharge: {facility} nurse advice line {org3}, or a portal message to "
    "{records_box}. Automated reminders come from {noreply_box}; replies are not read.\n\n",
    "Referral faxed to {facility2} at {org2}; their scheduling desk ({org3}) will contact the patient.\n\n",
)
_KIN_SHORTHAND = (
    "TELEPHONE NOTE ({lab_date2}): pt's {k_rel} «@as_» {k_first} called asking about discharge«@after» "
    "Advised to call back after the ward round.\n\n",
    "Visitors: {k_rel} «@as_» {k_first} at the bedside most afternoons«@after» «Wants|Asks|Hopes» to be "
    "present for the family meeting.\n\n",
)
_NICK_LINES = (
    "Communication: {p_pron} prefers a familiar name, «@as_» {nick}«@after» «Understood|Repeated back|"
    "Followed» the plan.\n\n",
    "«Prefers to be called|Likes to be called|Goes by» «@as_» {nick}; in good spirits on the ward round "
    "and asked about going home.\n\n",
)
_FOLLOWUP = Frames(
    train=(
        "FOLLOW-UP: {p_first} should see Dr. {d2_init} at {facility2} within {weeks} weeks. Clinic "
        "scheduling line ext. {ext}. Bring the medication list and glucose log.\n\n",
        "Disposition: discharged home on {dis} in stable condition. Follow-up with {specialty} on "
        "{prior2}. Return precautions reviewed with {p_title} {p_last} and {k_first}.\n\n",
    ),
    eval=(
        "NEXT STEPS: «review|follow-up|clinic review» in {weeks} weeks' time at {facility2}; «the patient|pt» «@as_»"
        " {p_first}«@after» «The reviewing doctor|Reviewer|Clinician» «@as_» {d2_init}«@after» "
        "Booking line extension {ext}. Please bring an up-to-date medicines list and the blood sugar diary.\n\n",
        "Outcome: went home on {dis}, stable. {specialty} appointment booked for {prior2}. Safety-netting advice given "
        "«@to» {p_last}«@after» «Also to|And to|Likewise to» «the relative|family|the carer» «@as_» "
        "{k_first}«@after»\n\n",
    ),
)

_SIGN = Frames(
    train=(
        "Electronically signed by {d1_name_h}, MD on {dis} at {time}.\n",
        "Dictated by: Dr. {d1_name_h}\nTranscribed: {dis} {time} (job {job_id})\n",
        "With kind regards,\n\n{d1_name_h}, MD\nConsultant, {specialty}\n{facility}\ncc: {p_name_h}\n",
        "Note by {d3_name}, PA-C, reviewed and co-signed by {d1_name_h} on {dis}.\n",
        "{d1_name_h}\n{specialty} service, {facility}\n{dis} {time}\n",
    ),
    eval=(
        "«e-Signed|Signed electronically|Authenticated» {dis} {time} «@as_» {d1_name_h}, MD«@after»\n",
        "«Dictated|Dictation|Voice note» {dis} {time}, job no. {job_id}, «@as_» {d1_name_h}«@after»\n",
        "«With best wishes|Kind regards|Yours sincerely|Best regards», «@as_» {d1_name_h}, MD\n{specialty} "
        "consultant, {facility}\n«Copy|cc|Copied» «@to» {p_name_h}«@after»\n",
        "«Entry written|Note written|Documented» by «a physician assistant|the PA|the assistant», «@as_» "
        "{d3_name}«@after» «Checked and countersigned|Countersigned|Co-signed» on {dis} «@as_» {d1_name_h}"
        "«@after»\n",
        "{specialty} team, {facility}, {dis} {time}, «@as_» {d1_name_h}«@after»\n",
    ),
)

_SYMPTOMS = (
    "shortness of breath", "productive cough and fever", "worsening leg swelling", "palpitations",
    "dizziness on standing", "poorly controlled blood sugar", "redness and pain in the left shin",
)  # fmt: skip
_DETAILS = (
    "using the rescue inhaler more often", "needing two pillows at night to breathe comfortably",
    "missing several doses of medication", "a new rash after starting an antibiotic",
)  # fmt: skip
_TRIGGERS = ("a viral illness", "a change in medication", "a long flight", "a fall at home")
_JOBS = ("a teacher", "an electrician", "a nurse", "an accountant", "a bus driver", "a chef", "a pharmacist")
_SPECIALTIES = ("Cardiology", "Pulmonology", "Nephrology", "Endocrinology", "Internal Medicine")
_IMAGING = ("no acute process", "a right lower lobe opacity", "mild cardiomegaly", "small bilateral effusions")
_ALLERGIES = ("penicillin (rash)", "no known drug allergies", "sulfa drugs (hives)", "latex")
_HABITS = (
    "Never smoker; drinks alcohol socially.",
    "Former smoker, quit in 2015; no alcohol.",
    "Smokes half a pack per day; counselled on cessation.",
)  # fmt: skip


def build(rng: Random, fake: Faker, min_chars: int, held_out: bool = False) -> tuple[str, tuple[Entity, ...]]:
    """Build one clinical document of at least ``min_chars`` characters.

    ``held_out`` (documents of the eval partition) takes the eval phrasings of every header,
    section and sign-off that holds personal data, and allows the forms of :mod:`.heldout`: birth
    and other dates in European, dashed or pharmacy-label formats, a preferred name used without
    a cue, addresses with spelled or unusual street numbers and types, and a relative's number
    abroad.
    """
    eponym = (_eval_eponym(rng) if held_out else pick(rng, _EPONYMS)) if rng.random() < 0.3 else None
    patient = make_person(rng, fake, last=eponym[0] if eponym else None, fictional=held_out)
    kin = make_person(rng, fake, fictional=held_out)
    doctors = [make_person(rng, fake, fictional=held_out) for _ in range(3)]
    word_doctor = rng.random() < 0.4
    if word_doctor:
        word = fictional_place_surname(rng) if held_out else pick(rng, _WORD_SURNAMES)
        doctors[1] = make_person(rng, fake, last=word, fictional=held_out)
    (cond, icd), (cond2, icd2) = rng.sample([c for c in _CONDITIONS if not eponym or c[0] != eponym[1]], 2)
    if eponym:
        cond, icd = eponym[1], eponym[2]
    drugs = rng.sample(_DRUGS, 3)
    # One coherent timeline: prior visit < admission <= labs <= discharge < follow-up.
    adm = between(rng, date(2019, 3, 1), date(2025, 10, 31))
    stay = rng.randrange(1, 9)
    dis = adm + timedelta(days=stay)
    # Held-out families, each in about half of the eval documents.
    odd_dates = held_out and rng.random() < 0.8
    caps = held_out and rng.random() < 0.75  # headers and signature blocks in capitals
    nick = fictional_nickname(patient.first, rng) if held_out and rng.random() < 0.7 else None
    odd_address = held_out and rng.random() < 0.6
    abroad = held_out and rng.random() < 0.5

    def fmt(d: date, s: int) -> str:
        return ho.date_written(d, s) if odd_dates else fmt_date(d, s)

    def during() -> str:
        return fmt(adm + timedelta(days=rng.randrange(stay + 1)), style)

    history_first = max(date(1995, 1, 1), patient.dob + timedelta(days=365 * 5))
    style = rng.randrange(7)
    she = patient.gender == "f"
    age = adm.year - patient.dob.year - ((adm.month, adm.day) < (patient.dob.month, patient.dob.day))
    address = _address(patient, rng) if odd_address else patient.address()
    domain = org_domain(rng)
    facility2 = pick(rng, _FACILITY).format(
        brand=brand(rng), saint=pick(rng, _SAINTS), street_word=pick(rng, _STREET_WORDS)
    )
    if word_doctor:
        facility2 = f"{doctors[1].last} {pick(rng, ('Avenue', 'Street', 'Road'))} {pick(rng, _PRACTICE_KINDS)}"
    ctx: dict[str, Slot] = {
        # Eval documents name their records system, a made-up word, wherever a value is "recorded in" it.
        "system": system_name(rng) if held_out else "",
        "facility": pick(rng, _FACILITY).format(
            brand=brand(rng), saint=pick(rng, _SAINTS), street_word=pick(rng, _STREET_WORDS)
        ),
        "facility2": facility2,
        "doctype": pick(rng, _DOCTYPES[:4]),
        "dept": pick(rng, _SPECIALTIES),
        "specialty": pick(rng, _SPECIALTIES),
        "p_name": E("NAME", patient.name),
        "p_name_rev": E("NAME", f"{patient.last.upper()}, {patient.first}"),
        "p_banner": E("NAME", f"{patient.last.upper()}, {patient.first}"),
        "p_name_h": E("NAME", patient.name.upper() if caps else patient.name),
        "d1_name_h": E("NAME", doctors[0].name.upper() if caps else doctors[0].name),
        "p_name_rev_mid": E("NAME", f"{patient.last}, {patient.first} {pick(rng, 'ABCDEFGHJKLMNPRSTW')}."),
        "d3_name": E("NAME", doctors[2].name),
        "p_first": E("NAME", patient.first),
        "p_last": E("NAME", patient.last),
        "p_title": patient.title,
        "p_pron": "she" if she else "he",
        "p_pron_cap": "She" if she else "He",
        "p_poss": "her" if she else "his",
        "p_poss_cap": "Her" if she else "His",
        "sex": "F" if she else "M",
        "sex_word": "woman" if she else "man",
        "age": str(age),
        "p_dob": E("DOB", fmt(patient.dob, style)),
        "p_dob2": E("DOB", fmt(patient.dob, style + 1)),
        "p_addr": E("ADDRESS", address),
        "p_phone": E("PHONE", patient.phone(rng.randrange(5))),
        "p_email": E("EMAIL", patient.email),
        "k_name": E("NAME", kin.name),
        "k_first": E("NAME", kin.first),
        "k_rel": relation(rng, kin),
        "k_phone": E("PHONE", ho.phone_international(rng) if abroad else kin.phone(rng.randrange(5))),
        "d1_name": E("NAME", doctors[0].name),
        "d2_name": E("NAME", doctors[1].name),
        "d2_last": E("NAME", doctors[1].last),
        "d2_init": E("NAME", f"{doctors[1].first[0]}. {doctors[1].last}"),
        "d3_last": E("NAME", doctors[2].last),
        "mrn": f"{rng.randrange(10**7, 10**8)}",
        "enc": f"ENC-{rng.randrange(10**6, 10**7)}",
        "acc": f"ACC{rng.randrange(10**5, 10**6)}",
        "adm": fmt(adm, style),
        "dis": fmt(dis, style),
        "prior": fmt(adm - timedelta(days=rng.randrange(20, 400)), style),
        "prior2": fmt(dis + timedelta(days=rng.randrange(7, 60)), style),
        "letter_date": fmt(dis + timedelta(days=rng.randrange(0, 5)), style + 1),
        "lab_date": during(),
        "hist_date": fmt(between(rng, history_first, date(2018, 12, 31)), style),
        "hist_date2": fmt(between(rng, history_first, date(2018, 12, 31)), style),
        "hist_year": str(rng.randrange(history_first.year, 2019)),
        "cond": cond,
        "icd": icd,
        "cond2": cond2,
        "icd2": icd2,
        "drug1": drugs[0],
        "drug2": drugs[1],
        "drug3": drugs[2],
        "symptom": pick(rng, _SYMPTOMS),
        "detail": pick(rng, _DETAILS),
        "trigger": pick(rng, _TRIGGERS),
        "days": str(rng.randrange(2, 15)),
        "weeks": str(rng.randrange(2, 7)),
        "job": pick(rng, _JOBS),
        "employer": str(fake.company()),
        "habits": pick(rng, _HABITS),
        "allergy": pick(rng, _ALLERGIES),
        "imaging": pick(rng, _IMAGING),
        "lungs": pick(rng, ("scattered wheeze", "crackles at the right base", "clear fields")),
        "bp": f"{rng.randrange(100, 170)}/{rng.randrange(60, 100)}",
        "hr": str(rng.randrange(55, 120)),
        "temp": f"{rng.randrange(360, 390) / 10:.1f}",
        "spo2": str(rng.randrange(88, 100)),
        "weight": str(rng.randrange(45, 130)),
        "bed": f"{rng.randrange(2, 9)}{pick(rng, 'ABCD')}-{rng.randrange(1, 30)}",
        "wbc": f"{rng.randrange(40, 180) / 10:.1f}",
        "hgb": f"{rng.randrange(90, 160) / 10:.1f}",
        "creat": f"{rng.randrange(6, 30) / 10:.1f}",
        "na": str(rng.randrange(128, 146)),
        "k": f"{rng.randrange(32, 55) / 10:.1f}",
        "a1c": f"{rng.randrange(52, 110) / 10:.1f}",
        "o2": str(rng.randrange(1, 4)),
        "ext": str(rng.randrange(2000, 8999)),
        "time": f"{rng.randrange(7, 22):02d}:{rng.randrange(60):02d}",
        "fall": str(rng.randrange(10, 60)),
        "group": f"GRP-{rng.randrange(10000, 99999)}-{rng.randrange(10, 99)}",
        "auth": f"{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}-{rng.randrange(100, 999)}",
        "agency": f"{brand(rng)} Home Health",
        "job_id": str(rng.randrange(10**5, 10**6)),
        "pharmacy": f"{brand(rng)} {pick(rng, ('Pharmacy', 'Drug', 'Apothecary'))}",
        "org1": org_phone(rng),
        "org2": org_phone(rng),
        "org3": org_phone(rng),
        "records_box": role_mailbox(rng, domain, ("records", "patientportal", "help", "appointments", "referrals")),
        "noreply_box": role_mailbox(rng, domain, ("noreply", "no-reply", "donotreply")),
        "nick": E("NAME", nick) if nick else "",
    }
    b = Builder(rng if held_out else None)
    if held_out:
        preamble(b, rng)
    letter = rng.random() < 0.25
    if letter:
        b.fill(pick(rng, _LETTER_HEADERS.of(held_out)), ctx)
    else:
        b.fill(pick(rng, _HEADERS.of(held_out)), ctx)
    b.fill(pick(rng, _HPI.of(held_out)), ctx)
    middle = [
        pick(rng, _SOCIAL.of(held_out)),
        pick(rng, _CONTACTS.of(held_out)),
        *rng.sample(_ORG_CONTACTS, 2 if rng.random() < 0.3 else 1),
    ]
    if rng.random() < 0.6:
        middle.append(pick(rng, _DOB_CUE_TRAPS))
    if she and age < 56 and rng.random() < 0.5:
        middle.append(_BIRTH_CONTROL)
    if nick:
        middle.append(pick(rng, _NICK_LINES))
    if held_out and rng.random() < 0.8:
        middle.append(pick(rng, _KIN_SHORTHAND))
    if held_out:
        middle += rng.sample(_DECOYS, rng.randrange(2, 5))
    rng.shuffle(middle)
    all_fillers = (*_FILLERS, *_PII_FILLERS.of(held_out))
    fillers = list(all_fillers)
    rng.shuffle(fillers)
    closing = pick(rng, _FOLLOWUP.of(held_out))
    signs = _SIGN.of(held_out)  # the third of each set closes a letter
    sign = signs[2] if letter else pick(rng, signs[:2] + signs[3:])
    reserve = len(closing) + len(sign) + 80
    day = 1
    while middle or (len(b) < min_chars - reserve):
        if middle and (rng.random() < 0.4 or len(b) >= min_chars - reserve):
            b.fill(middle.pop(0), {**ctx, "lab_date2": during()})
            continue
        if not fillers:
            fillers = [f for f in all_fillers if f.startswith(_REPEATABLE)]
        day += 1
        b.fill(fillers.pop(), {**ctx, "day": str(min(day, stay + 1)), "lab_date2": during()})
    b.fill(closing, ctx)
    b.fill(sign, ctx)
    while len(b) < min_chars:
        b.fill(
            "Addendum ({lab_date2}): results reviewed; no change to management.\n",
            {"lab_date2": during()},
        )
    return b.result()


def _address(p: Person, rng: Random) -> str:
    return ho.address_heldout(p.street, p.unit, p.city, p.state, p.zipcode, rng, prose=False)
